"""The MPE scenarios against MPE2 itself: the same state, the same actions, the same episode.

MPE2's world is set to warpsim's state after a reset; both then take the same actions, through
warpsim's PettingZoo adapter and MPE2's own parallel env, for a whole episode. MPE2 computes in
float64 and warpsim in float32 (docs/mpe.md), so figures agree to float32 rounding carried
through the episode's physics.
"""

import numpy as np
import pytest

mpe2 = pytest.importorskip("mpe2")
from mpe2 import simple_adversary_v3, simple_speaker_listener_v4, simple_spread_v3, simple_tag_v3  # noqa: E402

from warpsim.adapters.pettingzoo import parallel_env  # noqa: E402  (needs PettingZoo, which MPE2 needs)

RTOL = ATOL = 1e-4


SCENARIOS = {"simple_spread": (simple_spread_v3, "landmark"), "simple_tag": (simple_tag_v3, "obstacle"),
             "simple_adversary": (simple_adversary_v3, "landmark"),
             "simple_speaker_listener": (simple_speaker_listener_v4, "landmark")}
"""warpsim's id: MPE2's module, and the prefix of warpsim's state arrays of MPE2's landmarks."""


def mirrored(n: int, seed: int, **params):
    """warpsim's simple_spread and MPE2's, MPE2's world set to warpsim's first state."""
    return mirrored_scenario("simple_spread", seed, N=n, **params)


def mirrored_scenario(scenario: str, seed: int, **params):
    """warpsim's ``scenario`` and MPE2's, MPE2's world set to warpsim's first state."""
    ours = parallel_env(scenario, seed=seed, **params)
    ours.reset()
    theirs = SCENARIOS[scenario][0].parallel_env(**params)
    theirs.reset(seed=seed)
    copy_state(ours, theirs)
    return ours, theirs


def copy_state(ours, theirs) -> None:
    state, world = ours.env.state, theirs.unwrapped.world
    landmarks = SCENARIOS[ours.env.name][1]
    for i, agent in enumerate(world.agents):
        agent.state.p_pos = np.array([state.pos_x[0, i].item(), state.pos_y[0, i].item()], np.float64)
        agent.state.p_vel = np.array([state.vel_x[0, i].item(), state.vel_y[0, i].item()], np.float64)
    xs, ys = getattr(state, f"{landmarks}_x"), getattr(state, f"{landmarks}_y")
    for i, landmark in enumerate(world.landmarks):
        landmark.state.p_pos = np.array([xs[0, i].item(), ys[0, i].item()], np.float64)
    if ours.env.name == "simple_speaker_listener":  # the speaker's goal_b is the goal landmark
        world.agents[0].goal_b = world.landmarks[int(state.goal[0])]
    elif "goal" in state:  # simple_adversary: every agent's goal_a is the goal landmark
        for agent in world.agents:
            agent.goal_a = world.landmarks[int(state.goal[0])]


def play_episode(ours, theirs, actions_of, steps: int) -> int:
    """Steps both with the same actions and compares every agent's observation, reward and end; the steps played."""
    for step in range(1, steps + 1):
        actions = actions_of(step)
        our_obs, our_rewards, our_ends, our_cuts, _ = ours.step(actions)
        their_obs, their_rewards, their_ends, their_cuts, _ = theirs.step(actions)
        assert sorted(our_obs) == sorted(their_obs), step
        for name in their_obs:
            np.testing.assert_allclose(our_obs[name], their_obs[name], rtol=RTOL, atol=ATOL,
                                       err_msg=f"{name} step {step}")
            np.testing.assert_allclose(our_rewards[name], their_rewards[name], rtol=RTOL, atol=ATOL,
                                       err_msg=f"{name} step {step}")
            assert (our_ends[name], our_cuts[name]) == (their_ends[name], their_cuts[name]), (name, step)
        if any(their_cuts.values()) or any(their_ends.values()):
            return step
    return steps


@pytest.mark.parametrize("n, local_ratio", [(3, 0.5), (1, 0.5), (5, 0.2), (4, 1.0)])
def test_simple_spread_with_random_discrete_actions_is_mpe2s(n, local_ratio):
    ours, theirs = mirrored(n, seed=n, local_ratio=local_ratio, max_cycles=25)
    for name in theirs.agents:
        np.testing.assert_allclose(ours.observation_space(name).shape, theirs.observation_space(name).shape)
        assert ours.action_space(name) == theirs.action_space(name)
        np.testing.assert_array_equal(ours.env.observations[0, ours.agents.index(name)].numpy(),
                                      theirs.unwrapped.observe(name))
    rng = np.random.default_rng(n)
    played = play_episode(ours, theirs, lambda step: {name: int(rng.integers(5)) for name in theirs.agents}, 30)
    assert played == 25, "both cut the episode after max_cycles"


@pytest.mark.parametrize("seed", [0, 1])
def test_simple_spread_with_random_continuous_actions_is_mpe2s(seed):
    ours, theirs = mirrored(3, seed=seed, continuous_actions=True, max_cycles=25)
    for name in theirs.agents:
        space = ours.action_space(name)
        assert (space.shape, space.low.tolist(), space.high.tolist()) == ((5,), [0.0] * 5, [1.0] * 5)
    rng = np.random.default_rng(seed)
    play_episode(ours, theirs,
                 lambda step: {name: rng.random(5, dtype=np.float32) for name in theirs.agents}, 25)


@pytest.mark.parametrize("where", ["touching", "corners"])
def test_simple_spread_from_the_edge_cases_is_mpe2s(where):
    """Agents pressed together (the contact force's steep side), and agents in the corners running outwards."""
    ours, theirs = mirrored(4, seed=5, max_cycles=25)
    state = ours.env.state
    if where == "touching":
        positions = [(0.0, 0.0), (0.05, 0.0), (0.0, 0.12), (0.29, 0.01)]
        moves = [2, 1, 3, 0]  # towards each other
    else:
        positions = [(-1.0, -1.0), (1.0, -1.0), (-1.0, 1.0), (1.0, 1.0)]
        moves = [1, 2, 4, 3]
    for i, (x, y) in enumerate(positions):
        state.pos_x[0, i], state.pos_y[0, i] = x, y
        state.vel_x[0, i], state.vel_y[0, i] = 0.3 * (i - 1.5), -0.2
    copy_state(ours, theirs)
    played = play_episode(ours, theirs, lambda step: dict(zip(theirs.agents, moves)), 25)
    assert played == 25


@pytest.mark.parametrize("n, agents, landmarks", [(5, 2, 3), (3, 4, 5), (6, 1, 6), (1, 2, 1)])
def test_simple_spread_observing_the_nearest_is_mpe2s(n, agents, landmarks):
    """num_agent_neighbors and num_landmark_neighbors: the nearest first, zeros beyond those there are."""
    neighbours = dict(num_agent_neighbors=agents, num_landmark_neighbors=landmarks)
    ours, theirs = mirrored(n, seed=7, max_cycles=25, **neighbours)
    for name in theirs.agents:
        assert ours.observation_space(name).shape == theirs.observation_space(name).shape
        np.testing.assert_array_equal(ours.env.observations[0, ours.agents.index(name)].numpy(),
                                      theirs.unwrapped.observe(name))
    rng = np.random.default_rng(n)
    assert play_episode(ours, theirs, lambda step: {name: int(rng.integers(5)) for name in theirs.agents}, 25) == 25


def plays_as_mpe2(scenario: str, seed: int, settings: dict) -> None:
    """``scenario`` from the same start as MPE2's, with the same names, spaces and first observations, plays a
    whole episode of random actions (discrete or continuous, as ``settings`` say) as MPE2's does."""
    ours, theirs = mirrored_scenario(scenario, seed, max_cycles=25, **settings)
    assert ours.possible_agents == theirs.possible_agents
    for name in theirs.agents:
        assert ours.observation_space(name).shape == theirs.observation_space(name).shape, name
        assert ours.action_space(name) == theirs.action_space(name)
        np.testing.assert_array_equal(ours._observations([name])[name], theirs.unwrapped.observe(name))
    rng = np.random.default_rng(seed)
    continuous = settings.get("continuous_actions", False)
    spaces = {name: theirs.action_space(name) for name in theirs.agents}
    act = (lambda step: {name: rng.random(space.shape[0], dtype=np.float32) for name, space in spaces.items()}) \
        if continuous else (lambda step: {name: int(rng.integers(space.n)) for name, space in spaces.items()})
    assert play_episode(ours, theirs, act, 25) == 25


TAG_SETTINGS = {
    "MPE2's defaults": dict(),
    "2 good, 4 adversaries, 3 obstacles": dict(num_good=2, num_adversaries=4, num_obstacles=3),
    "no obstacles, continuous": dict(num_obstacles=0, continuous_actions=True),
    "the 2 nearest agents and obstacle": dict(num_good=2, num_adversaries=3, num_agent_neighbors=2,
                                            num_landmark_neighbors=1),
    "more slots than bodies": dict(num_agent_neighbors=6, num_landmark_neighbors=4),
}


@pytest.mark.parametrize("settings", TAG_SETTINGS.values(), ids=TAG_SETTINGS.keys())
def test_simple_tag_is_mpe2s(settings):
    """Roles of their own sizes (an adversary sees one good agent's velocity more), contacts with obstacles, top
    speeds and the boundary penalty, over a whole episode; each agent as MPE2 names it."""
    plays_as_mpe2("simple_tag", 3, settings)


def test_simple_tag_at_the_walls_and_caught_is_mpe2s():
    """A good agent pushed past the arena's edge (the exponential penalty) and adversaries touching it."""
    ours, theirs = mirrored_scenario("simple_tag", 4, max_cycles=25)
    state = ours.env.state
    for i, (x, y, vx) in enumerate([(0.93, 0.0, 0.0), (0.97, 0.05, 0.0), (0.9, -0.05, 0.0), (0.95, 0.0, 1.3)]):
        state.pos_x[0, i], state.pos_y[0, i], state.vel_x[0, i] = x, y, vx
    copy_state(ours, theirs)
    played = play_episode(ours, theirs, lambda step: dict(zip(theirs.agents, [2, 2, 2, 2])), 25)
    assert played == 25
    assert state.pos_x[0, 3] > 1, "the good agent ran past the wall"


ADVERSARY_SETTINGS = {
    "MPE2's defaults": dict(),
    "4 good agents": dict(N=4),
    "one good agent, continuous": dict(N=1, continuous_actions=True),
    "the 2 nearest agents and landmarks": dict(N=4, num_agent_neighbors=2, num_landmark_neighbors=2),
    "more slots than bodies": dict(N=2, num_agent_neighbors=5, num_landmark_neighbors=3),
}


@pytest.mark.parametrize("settings", ADVERSARY_SETTINGS.values(), ids=ADVERSARY_SETTINGS.keys())
def test_simple_adversary_is_mpe2s(settings):
    """The goal only good agents see (the adversary's observation 2 entries shorter), and both roles' rewards."""
    plays_as_mpe2("simple_adversary", 6, settings)


@pytest.mark.parametrize("continuous, seed", [(False, 1), (False, 2), (True, 3)], ids=["discrete", "discrete, another "
                                                                                       "start", "continuous"])
def test_simple_speaker_listener_is_mpe2s(continuous, seed):
    """Roles of their own actions (the speaker's 3 words, the listener's 5 moves) and observations (3 and 11): the
    word the listener hears, the goal's colour, the shared squared distance."""
    plays_as_mpe2("simple_speaker_listener", seed, dict(continuous_actions=continuous))


def test_simple_speaker_listener_in_a_corner_saying_every_word_is_mpe2s():
    """The listener at a corner running outwards while the speaker says each word in turn."""
    ours, theirs = mirrored_scenario("simple_speaker_listener", 4, max_cycles=25)
    state = ours.env.state
    state.pos_x[0, 1], state.pos_y[0, 1], state.vel_x[0, 1], state.vel_y[0, 1] = 1.0, -1.0, 0.4, -0.3
    copy_state(ours, theirs)
    played = play_episode(ours, theirs, lambda step: {"speaker_0": step % 3, "listener_0": 2 if step < 12 else 3}, 25)
    assert played == 25 and state.pos_x[0, 1] > 1.5
