"""One random stream per environment from one seed; resets touch only finished environments."""

import numpy as np
import pytest
import torch

import warpsim
from warpsim.actions import RandomActions
from warpsim.errors import InvalidValueError
from warpsim.kernels.random import random_key, streams_of

START = ("loc_x", "loc_y", "direction")


def starts(env):
    return np.stack([getattr(env.state, name).cpu().numpy() for name in START])


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_same_seed_same_starts_and_each_environment_its_own(backend):
    first = warpsim.make("tag_continuous", 4, backend=backend, seed=7, num_runners=5)
    again = warpsim.make("tag_continuous", 4, backend=backend, seed=7, num_runners=5)
    other = warpsim.make("tag_continuous", 4, backend=backend, seed=8, num_runners=5)
    np.testing.assert_array_equal(starts(first), starts(again))
    assert not np.array_equal(starts(first), starts(other))
    positions = first.state.loc_x.cpu().numpy()
    assert len({tuple(row) for row in positions}) == 4, "every environment must start differently"
    directions = first.state.direction.cpu().numpy()
    assert np.all(np.isin(np.round(directions / (np.pi / 2), 5), [0, 1, 2, 3]))


def test_a_second_reset_draws_new_starts():
    env = warpsim.make("tag_continuous", 2, backend="numpy", seed=3)
    first = starts(env)
    env.reset()
    assert not np.array_equal(first, starts(env))
    assert env.state.episode.tolist() == [2, 2]


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_auto_reset_touches_only_finished_environments(backend):
    env = warpsim.make("tag_continuous", 3, backend=backend, seed=1, num_runners=4, episode_length=5,
                       tagging_distance=0.0)
    env.state.t.copy_(torch.tensor([4, 0, 2], dtype=torch.int32))
    twin = warpsim.make("tag_continuous", 3, backend=backend, seed=1, num_runners=4, episode_length=50,
                        tagging_distance=0.0)
    env.actions.fill_(2)
    twin.actions.fill_(2)
    env.step()
    twin.step()
    assert env.done.tolist() == [True, False, False]
    assert env.state.t.tolist() == [0, 1, 3]
    assert env.state.episode.tolist() == [2, 1, 1]
    for name in ("loc_x", "loc_y", "speed", "direction"):
        np.testing.assert_array_equal(getattr(env.state, name)[1:].cpu(), getattr(twin.state, name)[1:].cpu())
    assert (env.state.speed[0] == 0).all(), "the finished environment starts a new episode"
    assert torch.isclose(env.observations[0, :, -1], torch.zeros(5)).all(), "its time entry is 0"
    assert not torch.equal(env.state.loc_x[0], twin.state.loc_x[0])


def state_arrays(env) -> dict:
    return {name: tensor.cpu().clone() for name, tensor in env.state.items()}


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
@pytest.mark.parametrize("env_id, params", [
    ("tag_continuous", {"num_runners": 3, "episode_length": 5, "tagging_distance": 0.3}),
    ("tag_gridworld", {"num_taggers": 1, "grid_length": 4, "episode_length": 5}),
    ("beacon", {"num_agents": 2, "episode_length": 4}),
])
def test_blocks_that_share_streams_step_as_the_environments_alone(backend, env_id, params):
    """streams=2 over 6 environments: each block of 2 starts, steps and restarts (episodes end within the
    steps) as an environment of 2 alone, bit for bit."""
    alone = warpsim.make(env_id, 2, backend=backend, seed=9, **params)
    shared = warpsim.make(env_id, 6, backend=backend, seed=9, streams=2, **params)
    assert (alone.streams, shared.streams) == (None, 2)
    draw = RandomActions(alone.spec, alone.device)
    generator = torch.Generator().manual_seed(0)
    for step in range(12):
        actions = draw((2, alone.num_agents), generator)
        alone.step(actions)
        shared.step(actions.repeat(3, *[1] * (actions.dim() - 1)))
        for block in range(3):
            rows = slice(2 * block, 2 * block + 2)
            for name in ("observations", "rewards", "done"):
                assert torch.equal(getattr(shared, name)[rows].cpu(), getattr(alone, name).cpu()), (step, name)
            mine = state_arrays(alone)
            for name, tensor in state_arrays(shared).items():  # per environment, or shared by all (agent roles)
                assert torch.equal(tensor[rows] if tensor.shape[0] == 6 else tensor, mine[name]), (step, name)
    assert shared.state.episode.min() > 1, "episodes ended and restarted within the steps"


def test_one_stream_per_environment_keeps_the_seed_as_the_key():
    """Environments made without streams draw what they drew before streams existed."""
    assert random_key(7) == np.uint64(7) and random_key(7, 4) == np.uint64(7 + ((3 ^ 0xFFFFFFFF) << 32))
    assert [streams_of(random_key(7, streams)) for streams in (None, 1, 4, 2**31)] == [None, 1, 4, 2**31]
    a = warpsim.make("tag_continuous", 3, backend="numpy", seed=7)
    b = warpsim.make("tag_continuous", 3, backend="numpy", seed=7, streams=4)
    np.testing.assert_array_equal(starts(a), starts(b))


@pytest.mark.parametrize("streams", [0, -1, 3, 6, 2**32, True, 1.5, "2"])
def test_a_bad_number_of_streams_is_one_line_naming_it(streams):
    with pytest.raises(InvalidValueError, match=r"^streams=.* is not allowed; give a power of two in \[1, 2\*\*31\]"):
        warpsim.make("tag_continuous", 3, backend="numpy", streams=streams)
