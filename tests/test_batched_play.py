"""Plays side by side (``BatchedPlayer``): each play's figures are those it gives in an environment of its own."""

import io

import pytest
import torch

from warpsim.analysis import evaluate as evaluate_module
from warpsim.analysis.evaluate import evaluate_runs
from warpsim.analysis.play import BatchedPlayer, Play, Player, evaluate, evaluate_plays
from warpsim.cli import main
from warpsim.errors import InvalidValueError
from warpsim.registry import make
from warpsim.roles import roles_of
from warpsim.train.episodes import EpisodeStats
from warpsim.train.policy import RolePolicies

CONTINUOUS = {"num_runners": 3, "episode_length": 12, "tagging_distance": 0.4, "grid_length": 3.0,
              "continuous_actions": True}


def policies(env, seed: int, stack: int, hidden_size: int = 16, policy_head: str = "gaussian") -> RolePolicies:
    torch.manual_seed(seed)
    names = [role.name for role in roles_of(env.spec, env.device)]
    return RolePolicies(env.spec, names, stack, hidden_size, 2,
                        policy_head=policy_head).to(env.device).eval()


@pytest.mark.parametrize("backend", ["numpy", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("params, policy_head", [(CONTINUOUS, "gaussian"), (CONTINUOUS, "tanh_normal"),
                                                 ({**CONTINUOUS, "continuous_actions": False}, "gaussian")])
def test_each_play_side_by_side_equals_the_play_alone(backend, params, policy_head):
    """Random play, sampled and greedy play of two networks, and one with its runners at random, in one
    environment of 5 blocks of 4 (3 counted, observations stacked 2 deep), each equal, figure for
    figure, to the play in an environment of 3 of its own."""
    alone_env = lambda: make("tag_continuous", 3, backend=backend, seed=4, **params)  # noqa: E731
    first, second = (policies(alone_env(), seed, 2, policy_head=policy_head) for seed in (0, 1))
    plays = [Play(None), Play(first, greedy=False), Play(second, greedy=True), Play(first, greedy=True),
             Play(second, greedy=False, random_roles=("runner",))]
    env = make("tag_continuous", 4 * len(plays), backend=backend, seed=4, streams=4, **params)
    together = evaluate_plays(BatchedPlayer(env, plays, envs_per_play=3, stack_observations=2, seed=7), 6)
    for play, result in zip(plays, together):
        alone = evaluate(Player(alone_env(), play.policies, greedy=play.greedy, random_roles=play.random_roles,
                                stack_observations=2, seed=7), 6)
        assert result.record() == alone.record()
    assert len({repr(result.record()) for result in together}) == len(plays), "the plays differ"


def test_a_play_side_by_side_takes_its_steps_not_the_slowest_plays():
    """Plays that finish their episodes sooner report their own steps: those they take alone."""
    env = make("tag_continuous", 4, backend="numpy", seed=0, streams=2, **CONTINUOUS)
    catcher = policies(env, 3, 1)
    quick, slow = Play(catcher, greedy=True), Play(None)
    together = evaluate_plays(BatchedPlayer(env, [quick, slow], seed=2), 40)
    alone = [evaluate(Player(make("tag_continuous", 2, backend="numpy", seed=0, **CONTINUOUS), play.policies,
                             greedy=play.greedy, seed=2), 40) for play in (quick, slow)]
    assert [result.steps for result in together] == [result.steps for result in alone]
    assert together[0].steps != together[1].steps, "one play finished sooner"


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    """Two seeds of two network widths of a tag_gridworld experiment, one iteration each."""
    path = tmp_path_factory.mktemp("batched") / "e"
    assert main(["train", "--env", "tag_gridworld", "--set", "num_taggers=2", "--set", "grid_length=5", "--set",
                 "episode_length=8", "--num-envs", "4", "--rollout-steps", "8", "--backend", "numpy", "--quiet",
                 "--iterations", "1", "--seeds", "2", "--sweep", "hidden_size=8,16", "--run-dir", str(path)]) == 0
    return path


def test_runs_play_in_one_environment_per_network_shape_and_random_play_once(experiment, monkeypatch):
    runs = sorted(path for path in experiment.iterdir() if path.is_dir())
    batches = []
    original = evaluate_module.evaluate_plays

    def counted(player, episodes, *args):
        batches.append([None if play.policies is None else play.policies.networks[0].trunk[0].out_features
                        for play in player.plays])
        return original(player, episodes, *args)

    monkeypatch.setattr(evaluate_module, "evaluate_plays", counted)
    together = evaluate_runs(runs, 8, num_envs=4, backend="numpy", progress=None)
    assert sorted(batches, key=len) == [[8, 8, 8, 8], [None, 16, 16, 16, 16]] or \
        sorted(batches, key=len) == [[16, 16, 16, 16], [None, 8, 8, 8, 8]]
    monkeypatch.undo()
    for path, result in zip(runs, together):
        alone = evaluate_module.evaluate_run(path, 8, num_envs=4, backend="numpy")
        assert result.record()["plays"] == alone.record()["plays"] and result.random == alone.random


def test_batches_of_few_agents_give_the_same_figures(experiment, monkeypatch):
    """With room for two plays per environment, the runs play in five batches, figure for figure as in two."""
    runs = sorted(path for path in experiment.iterdir() if path.is_dir())
    wide = evaluate_runs(runs, 8, num_envs=4, backend="numpy")
    made = []
    original = evaluate_module._run_env
    monkeypatch.setattr(evaluate_module, "BATCH_AGENTS", 2 * 4 * 3)  # two plays of 4 environments of 3 agents

    def recorded(*args, **kwargs):
        made.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(evaluate_module, "_run_env", recorded)
    narrow = evaluate_runs(runs, 8, num_envs=4, backend="numpy")
    assert sorted(kwargs["plays"] for kwargs in made if "plays" in kwargs) == [1, 2, 2, 2, 2]
    assert [result.record()["plays"] for result in narrow] == [result.record()["plays"] for result in wide]


def test_a_progress_line_per_batch(experiment):
    stream = io.StringIO()
    evaluate_runs(sorted(path for path in experiment.iterdir() if path.is_dir()), 4, num_envs=4, backend="numpy",
                  progress=stream)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and all(line.startswith("playing ") and "side by side" in line for line in lines)
    assert sum("and random play" in line for line in lines) == 1


def test_plays_that_cannot_share_an_environment_are_refused_in_one_line():
    env = make("tag_continuous", 4, backend="numpy", **CONTINUOUS)
    with pytest.raises(InvalidValueError, match="3 plays cannot share 4 environments"):
        BatchedPlayer(env, [Play(None)] * 3)
    with pytest.raises(InvalidValueError, match=r"random roles \['walker'\] are not roles of tag_continuous"):
        BatchedPlayer(env, [Play(None), Play(policies(env, 0, 1), random_roles=("walker",))])
    with pytest.raises(InvalidValueError, match="the same action head"):
        BatchedPlayer(env, [Play(policies(env, 0, 1)), Play(policies(env, 0, 1, policy_head="tanh_normal"))])
    with pytest.raises(InvalidValueError, match=r"envs_per_play=3 is not allowed; give 1 to 2"):
        BatchedPlayer(env, [Play(None)] * 2, envs_per_play=3)
    with pytest.raises(InvalidValueError, match="the player has 2 plays; evaluate them with evaluate_plays"):
        evaluate(BatchedPlayer(env, [Play(None)] * 2), 4)  # type: ignore[arg-type]


def test_blocked_statistics_are_read_by_block():
    env = make("tag_continuous", 4, backend="numpy", **CONTINUOUS)
    roles = roles_of(env.spec, env.device)
    with pytest.raises(InvalidValueError, match="blocks=3 does not divide the 4 environments"):
        EpisodeStats(env, roles, blocks=3)
    stats = EpisodeStats(env, roles, blocks=2)
    with pytest.raises(InvalidValueError, match="read them with read_blocks"):
        stats.read()
    assert len(stats.read_blocks()) == 2


def test_statistics_of_a_checkpoint_from_before_blocks_load():
    """Checkpoints of 0.1 hold the totals as float[K]; they fill the one block's row."""
    env = make("tag_continuous", 2, backend="numpy", **CONTINUOUS)
    stats = EpisodeStats(env, roles_of(env.spec, env.device))
    state = stats.state_dict()
    state["totals"] = torch.arange(float(stats.totals.shape[1]))
    stats.load_state_dict(state)
    assert torch.equal(stats.totals, state["totals"][None])


def test_runs_evaluated_on_environments_short_of_a_power_of_two_play_as_alone(experiment):
    """--num-envs 3: blocks of 4, the fourth environment of each playing uncounted."""
    runs = sorted(path for path in experiment.iterdir() if path.is_dir())
    together = evaluate_runs(runs, 6, num_envs=3, backend="numpy")
    for path, result in zip(runs, together):
        for play in ("sampled", "greedy"):
            env, own_policies, config = evaluate_module.load_run(path, 3, backend="numpy")
            alone = evaluate(Player(env, own_policies, greedy=play == "greedy", seed=1,
                                    stack_observations=config.stack_observations), 6)
            assert result.plays[play].record()["means"] == alone.record()["means"]
            assert result.plays[play].steps == alone.steps
