"""Roles trained against fixed opponents: random play and policies frozen from another run."""

import json
from typing import Any

import pytest
import torch

from warpsim.analysis.evaluate import evaluate_run
from warpsim.cli import main
from warpsim.errors import InvalidValueError, RunFileError
from warpsim.train import TrainConfig, Trainer
from warpsim.train.loop import train
from warpsim.train.run_policies import StackedLinear

TAG: dict[str, Any] = dict(env="tag_continuous", env_params=dict(num_taggers=1, num_runners=3, episode_length=10),
           num_envs=3, rollout_steps=6, backend="numpy", stack_observations=2)
GRID: dict[str, Any] = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=8),
            num_envs=4, rollout_steps=8, backend="numpy")


def network_parameters(trainer: Trainer, role: str) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trainer.policies.network(role).parameters()]


def test_a_frozen_role_never_changes_and_the_learning_role_does(tmp_path):
    source = train(TrainConfig(**TAG, iterations=2), tmp_path / "source", progress=None)
    config = TrainConfig(**TAG, iterations=3, opponents={"runner": f"checkpoint:{tmp_path / 'source'}"})
    trainer = Trainer(config)
    frozen, tagger = network_parameters(trainer, "runner"), network_parameters(trainer, "tagger")
    for a, b in zip(frozen, network_parameters(source, "runner")):
        assert torch.equal(a, b), "the opponent is the other run's runner"
    assert [role.name for role in trainer.learners] == ["tagger"]
    optimized = {id(p) for group in trainer.learner.optimizer.param_groups for p in group["params"]}
    assert optimized == {id(p) for p in trainer.policies.network("tagger").parameters()}
    for _ in range(config.iterations):
        trainer.iterate()
    assert all(p.grad is None for p in trainer.policies.network("runner").parameters()), "no gradient reaches it"
    for a, b in zip(frozen, network_parameters(trainer, "runner")):
        assert torch.equal(a, b)
    assert not all(torch.equal(a, b) for a, b in zip(tagger, network_parameters(trainer, "tagger")))


def test_a_random_role_plays_every_action_component_uniformly(monkeypatch):
    settings = {**TAG, "num_envs": 16, "rollout_steps": 25, "env_params": {**TAG["env_params"], "num_runners": 8}}
    trainer = Trainer(TrainConfig(**settings, opponents={"runner": "random"}))
    with torch.no_grad():  # a runner network that would always pick each component's first choice
        bias = torch.cat([torch.eye(levels)[0] * 50 for levels in trainer.env.spec.action_levels])
        policy_head = trainer.policies.network("runner").policy_head
        assert isinstance(policy_head, StackedLinear)
        policy_head.bias.copy_(bias)
    played = []
    step = trainer.env.step

    def recording_step(*args, **kwargs):
        played.append(trainer.env.actions[:, 1:].clone())  # the runners: agents 1..8
        return step(*args, **kwargs)

    monkeypatch.setattr(trainer.env, "step", recording_step)
    trainer.collector.collect()
    actions = torch.cat(played).reshape(-1, 2)
    assert actions.shape[0] == 25 * 16 * 8
    for component, levels in enumerate(trainer.env.spec.action_levels):
        counts = torch.bincount(actions[:, component].long(), minlength=levels).float()
        expected = actions.shape[0] / levels
        chi_square = ((counts - expected) ** 2 / expected).sum().item()
        # The 0.999 quantile of chi-square with levels - 1 degrees of freedom is below 3 * levels + 10 here.
        assert chi_square < 3 * levels + 10, f"component {component}: counts {counts.tolist()}"
    assert len(trainer.storage) == 1, "no rollout storage for a random role"


def test_resume_keeps_the_opponents(tmp_path):
    train(TrainConfig(**TAG, iterations=1), tmp_path / "source", progress=None)
    kind = f"checkpoint:{tmp_path / 'source'}"
    config = TrainConfig(**TAG, iterations=3, checkpoint_every=1, opponents={"runner": kind})
    stopped = train(config, tmp_path / "run", stop_after=1, progress=None)
    frozen = network_parameters(stopped, "runner")
    (tmp_path / "source" / "checkpoint.pt").unlink()  # a resume reads the frozen policy from its own checkpoint
    resumed = train(None, tmp_path / "run", resume=True, progress=None)
    assert resumed.config.opponents == {"runner": kind} and resumed.iteration == 3
    assert json.loads((tmp_path / "run" / "config.json").read_text())["opponents"] == {"runner": kind}
    for a, b in zip(frozen, network_parameters(resumed, "runner")):
        assert torch.equal(a, b)


def test_evaluate_and_render_play_a_random_opponent_at_random(tmp_path, capsys):
    assert main(["train", "--config", "grid-small", "--iterations", "1", "--num-envs", "4", "--rollout-steps", "8",
                 "--opponent", "runner=random", "--run-dir", str(tmp_path / "run"), "--backend", "numpy",
                 "--quiet"]) == 0
    result = evaluate_run(tmp_path / "run", 8, num_envs=4, backend="numpy", plays=("greedy",))
    assert list(result.plays) == ["greedy"] and result.plays["greedy"].random_roles == ("runner",)
    assert result.random is not None and set(result.random.random_roles) == {"tagger", "runner"}
    assert result.plays["greedy"].ratios()["episode length"] > 0
    assert main(["evaluate", str(tmp_path / "run"), "--episodes", "4", "--num-envs", "4",
                 "--backend", "numpy"]) == 0
    assert "mean return of a runner (uniformly random)" in capsys.readouterr().out


def test_the_command_line_records_opponents_and_self_removes_one(tmp_path):
    args = ["train", "--config", "grid-small", "--iterations", "1", "--num-envs", "4", "--rollout-steps", "8",
            "--backend", "numpy", "--quiet"]
    assert main([*args, "--opponent", "runner=random", "--opponent", "runner=self",
                 "--run-dir", str(tmp_path / "a")]) == 0
    assert json.loads((tmp_path / "a" / "config.json").read_text())["opponents"] == {}


@pytest.mark.parametrize("opponent, error, message", [
    ({"hider": "random"}, InvalidValueError, r"opponent role\(s\) hider are not roles of tag_continuous; "
                                             r"its roles: runner, tagger"),
    ({"runner": "frozen"}, InvalidValueError, r"opponent runner='frozen' is not allowed; choose 'random'"),
    ({"runner": "checkpoint:"}, InvalidValueError, r"opponent runner='checkpoint:' is not allowed"),
    ({"runner": "random", "tagger": "random"}, InvalidValueError, r"every role of tag_continuous is an opponent"),
    ({"runner": "checkpoint:/no/such/run"}, RunFileError, r"/no/such/run does not exist"),
], ids=["unknown role", "unknown kind", "empty path", "no learner", "missing run dir"])
def test_bad_opponents_are_clear_errors_and_nothing_is_written(tmp_path, opponent, error, message):
    with pytest.raises(error, match=message):
        train(build(opponent), tmp_path / "run", progress=None)
    assert not (tmp_path / "run").exists()


def build(opponent: dict) -> TrainConfig:
    return TrainConfig(**TAG, iterations=1, opponents=opponent)


def test_a_checkpoint_of_another_environment_or_shape_is_refused(tmp_path):
    train(TrainConfig(**GRID, iterations=1), tmp_path / "grid", progress=None)
    with pytest.raises(InvalidValueError, match="trained on another environment or shape: env 'tag_gridworld'"):
        Trainer(build({"runner": f"checkpoint:{tmp_path / 'grid'}"}))
    train(TrainConfig(**{**TAG, "stack_observations": 1}, iterations=1), tmp_path / "flat", progress=None)
    with pytest.raises(InvalidValueError, match="another shape .stack_observations 1 there, 2 here"):
        Trainer(build({"runner": f"checkpoint:{tmp_path / 'flat'}"}))
    train(build({"runner": "random"}), tmp_path / "untrained", progress=None)
    with pytest.raises(InvalidValueError, match="that run did not train runner"):
        Trainer(build({"runner": f"checkpoint:{tmp_path / 'untrained'}"}))


def test_command_line_opponent_errors_are_one_line(tmp_path, capsys):
    assert main(["train", "--config", "grid-small", "--opponent", "runner", "--run-dir", str(tmp_path / "a")]) == 2
    assert "--opponent 'runner': expected ROLE=KIND" in capsys.readouterr().err
    assert main(["train", "--resume", "--run-dir", str(tmp_path / "a"), "--opponent", "runner=random"]) == 2
    assert "only --iterations may be given" in capsys.readouterr().err
