"""The trainer's graphs setting: captured rollouts and updates on a GPU, eager ones elsewhere and under DDP."""

import dataclasses
import json
from typing import Any

import pytest
import torch

from warpsim.cli import main
from warpsim.errors import InvalidValueError
from warpsim.train import TrainConfig, Trainer
from warpsim.train.graphs import CapturedGraph, check_unchanged, resolve_graphs
from warpsim.train.loop import train

GRID: dict[str, Any] = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=8),
            num_envs=4, rollout_steps=8, backend="numpy")
CUDA, CPU = torch.device("cuda"), torch.device("cpu")


@pytest.mark.parametrize("value", ["yes", "", None, True])
def test_graphs_must_be_auto_on_or_off(value):
    with pytest.raises(InvalidValueError, match=rf"config field graphs={value!r} is not allowed; choose one of "
                                                r"auto, on, off"):
        TrainConfig(**GRID, graphs=value)


@pytest.mark.parametrize("setting, device, world_size, captured", [
    ("auto", CUDA, 1, True), ("on", CUDA, 1, True), ("off", CUDA, 1, False),
    ("auto", CUDA, 2, False), ("on", CUDA, 4, False),  # DDP: eager rollouts
    ("auto", CPU, 1, False), ("off", CPU, 1, False),
])
def test_which_runs_capture_their_rollouts(setting, device, world_size, captured):
    assert resolve_graphs(setting, device, world_size) is captured


def test_graphs_on_without_cuda_is_an_error_before_anything_is_written(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main(["train", "--env", "tag_gridworld", "--backend", "numpy", "--num-envs", "2", "--iterations", "1",
                 "--graphs", "on", "--run-dir", str(run_dir), "--quiet"])
    assert code == 2
    assert "graphs='on' needs CUDA (the environments run on cpu)" in capsys.readouterr().err
    assert not run_dir.exists()


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_without_a_gpu_the_rollout_is_eager_and_the_setting_is_recorded(tmp_path, backend):
    trainer = train(TrainConfig(**{**GRID, "backend": backend}, iterations=2, graphs="auto"), tmp_path / "run")
    assert trainer.launches == "eager" and trainer.rollout == trainer.collector.collect
    assert trainer.update_launches == "eager" and trainer.update == trainer.learner.learn
    assert json.loads((tmp_path / "run" / "config.json").read_text())["graphs"] == "auto"


def test_a_replay_refuses_settings_other_than_the_captured_ones():
    captured = {"config field clip_coef": 0.2, "the minibatch count": 4}
    check_unchanged(captured, dict(captured))
    with pytest.raises(InvalidValueError, match=r"^the minibatch count is 6, but the captured graph was recorded "
                                                r"with 4; settings are fixed for a trainer's life: build a new "
                                                r"Trainer for new ones$"):
        check_unchanged(captured, {**captured, "the minibatch count": 6})


def gpu_config(**changes) -> TrainConfig:
    settings = dict(env="tag_continuous", num_envs=16, rollout_steps=8, backend="cuda", epochs=2, minibatches=2,
                    iterations=6, env_params=dict(num_taggers=2, num_runners=6, episode_length=5,
                                                  use_full_observation=False, num_other_agents_observed=3))
    return TrainConfig(**{**settings, **changes})


ON_THE_CPU = pytest.param("cpu", id="cpu: eager against eager, the test's own path")
ON_THE_GPU = pytest.param("gpu", id="gpu", marks=pytest.mark.gpu)


def graphed_and_eager(device: str, **changes) -> tuple[Trainer, Trainer]:
    """Two trainers of one config: on the GPU one captured and one eager; on the CPU (NumPy
    environments) both eager, so that the test's Python path runs where no GPU is."""
    if device == "gpu":
        return Trainer(gpu_config(graphs="on", **changes)), Trainer(gpu_config(graphs="off", **changes))
    config = gpu_config(graphs="off", backend="numpy", **changes)
    return Trainer(config), Trainer(config)


@pytest.mark.parametrize("device", [ON_THE_CPU, ON_THE_GPU])
@pytest.mark.parametrize("changes", [{}, {"opponents": {"runner": "random"}, "stack_observations": 2},
                                     {"precision": "fp32"}], ids=["self-play", "random runners, stacked", "fp32"])
def test_a_captured_rollout_trains_as_the_eager_one(device, changes):
    """Same seed: the graph path gives the eager path's trajectory and networks. The rollouts'
    actions and the environment's integer state must match exactly; floats to 1e-5 (a graph
    replays the eager kernels, so bit for bit is expected, but cuBLAS may choose another
    algorithm when it is captured)."""
    graphed, eager = graphed_and_eager(device, **changes)
    assert graphed.launches == ("cuda-graph" if device == "gpu" else "eager") and eager.launches == "eager"
    for _ in range(4):  # eager warm-up, capture and replay, then two replays
        graphed.iterate()
        eager.iterate()
        for mine, theirs in zip(graphed.storage.values(), eager.storage.values()):
            assert torch.equal(mine.actions, theirs.actions)
        assert torch.equal(graphed.env.state.episode, eager.env.state.episode)
        for mine, theirs in zip(graphed.storage.values(), eager.storage.values()):
            torch.testing.assert_close(mine.log_probs, theirs.log_probs, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(mine.values, theirs.values, rtol=1e-5, atol=1e-5)
    for graphed_parameter, eager_parameter in zip(graphed.policies.parameters(), eager.policies.parameters()):
        torch.testing.assert_close(graphed_parameter, eager_parameter, rtol=1e-5, atol=1e-5)
    assert graphed.read_metrics()[0]["episodes"] == eager.read_metrics()[0]["episodes"] > 0
    assert torch.equal(graphed.generators[0].get_state(), eager.generators[0].get_state())


@pytest.mark.gpu
@pytest.mark.parametrize("changes", [{"opponents": {"runner": "random"}}, {"compile": "on"}],
                         ids=["random runners", "fused"])
def test_a_captured_iteration_never_waits_for_the_device(changes):
    """Rollout and update, kl schedule included (the default): no host read anywhere."""
    trainer = Trainer(gpu_config(graphs="on", **changes))
    trainer.iterate()  # eager warm-up
    trainer.iterate()  # capture (synchronises once) and replay
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        trainer.iterate()
        trainer.iterate()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert trainer.read_metrics()[0]["iteration"] == 4


@pytest.mark.gpu
def test_a_resumed_graph_run_continues_as_an_uninterrupted_one(tmp_path):
    config = gpu_config(graphs="on", iterations=6, checkpoint_every=3)
    whole = train(config, tmp_path / "whole")
    train(config, tmp_path / "parts", stop_after=3)
    resumed = train(None, tmp_path / "parts", resume=True)
    for mine, theirs in zip(resumed.policies.parameters(), whole.policies.parameters()):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-5)
    assert torch.equal(resumed.env.state.episode, whole.env.state.episode)


def snapshot(trainer: Trainer) -> dict:
    """Every tensor an update reads and writes, copied: networks, value statistics, Adam's
    state, learning rates, sampling generators."""
    state = {f"optimizer {id(tensor)}": tensor for per_parameter in trainer.learner.optimizer.state.values()
             for tensor in per_parameter.values()}
    state.update({f"rate {i}": rate for i, rate in enumerate(trainer.learner.learning_rates.rates)})
    state.update(trainer.policies.state_dict())
    return {"tensors": {name: (tensor, tensor.clone()) for name, tensor in state.items()},
            "generators": [generator.get_state() for generator in trainer.generators]}


def restore(saved: dict, trainer: Trainer) -> None:
    """Puts ``snapshot``'s values back into the very tensors (a captured graph holds their addresses)."""
    for tensor, value in saved["tensors"].values():
        tensor.copy_(value)
    for generator, state in zip(trainer.generators, saved["generators"]):
        generator.set_state(state)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_a_captured_update_equals_the_eager_one_from_the_same_state_and_seeds(precision):
    """One trainer, one rollout: its update replayed from the graph, then, from the same state and
    generator, run eagerly. The graph replays the very kernels on the very addresses, so the two agree
    bit for bit unless cuBLAS chose another algorithm under capture; 1e-6 allows for that
    (one reordered float32 sum per layer, scaled by a learning rate of 1e-3)."""
    trainer = Trainer(gpu_config(graphs="on", precision=precision))
    assert trainer.update_launches == "cuda-graph" and isinstance(trainer.update, CapturedGraph)
    for _ in range(2):  # eager warm-up, then capture
        trainer.iterate()
    assert trainer.update.captures == 1
    next_values = [values.clone() for values in trainer.rollout()]
    saved = snapshot(trainer)
    trainer.update(next_values)
    captured = {name: tensor.clone() for name, (tensor, _) in saved["tensors"].items()}
    captured_stats = trainer.learner.update_stats.clone()
    restore(saved, trainer)
    trainer.learner.learn(next_values)
    for name, (tensor, _) in saved["tensors"].items():
        torch.testing.assert_close(captured[name], tensor, rtol=1e-6, atol=1e-6, msg=name)
    torch.testing.assert_close(captured_stats, trainer.learner.update_stats, rtol=1e-6, atol=1e-6)
    assert any(not torch.equal(tensor, before) for tensor, before in saved["tensors"].values()), "it learned"


@pytest.mark.gpu
@pytest.mark.parametrize("changes", [{}, {"compile": "on"}, {"lr_schedule": "linear", "value_clip": 0.2}],
                         ids=["default", "fused", "linear rate, clipped value"])
def test_ten_captured_iterations_equal_ten_eager_ones(changes):
    """Rollout and update both replayed, against both eager (the fused path both ways): the actions
    and the environments' integer state exactly, the floats to 1e-5 (see the rollout's test)."""
    graphed, eager = Trainer(gpu_config(graphs="on", **changes)), Trainer(gpu_config(graphs="off", **changes))
    for _ in range(10):
        graphed.iterate()
        eager.iterate()
        for mine, theirs in zip(graphed.storage.values(), eager.storage.values()):
            assert torch.equal(mine.actions, theirs.actions)
        assert torch.equal(graphed.env.state.episode, eager.env.state.episode)
    assert isinstance(graphed.update, CapturedGraph)
    assert graphed.update.captures == 1 and eager.update == eager.learner.learn
    for mine, theirs in zip(graphed.policies.state_dict().values(), eager.policies.state_dict().values()):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(graphed.learner.learning_rates.values(), eager.learner.learning_rates.values(),
                               rtol=1e-5, atol=0)
    (graphed_metrics,), (eager_metrics,) = graphed.read_metrics(), eager.read_metrics()
    for name in ("approx_kl", "value_loss", "explained_variance", "learning_rate"):
        assert graphed_metrics[name] == pytest.approx(eager_metrics[name], rel=1e-4, abs=1e-6), name


@pytest.mark.gpu
def test_a_setting_changed_after_the_capture_is_refused_before_anything_runs():
    trainer = Trainer(gpu_config(graphs="on"))
    for _ in range(2):
        trainer.iterate()
    before = [parameter.clone() for parameter in trainer.policies.parameters()]
    trainer.configs = [dataclasses.replace(trainer.config, max_learning_rate=0.05)]
    with pytest.raises(InvalidValueError, match=r"config field max_learning_rate is 0.05, but the captured graph "
                                                r"was recorded with 0.01; settings are fixed for a trainer's life"):
        trainer.update(trainer.rollout())
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.policies.parameters()))


@pytest.mark.gpu
def test_under_fp16_the_rollout_is_captured_and_the_update_stays_eager():
    """The gradient scaler reads its overflow flag on the host at every step: nothing to capture."""
    trainer = Trainer(gpu_config(graphs="on", precision="fp16"))
    assert trainer.launches == "cuda-graph" and trainer.update_launches == "eager"
    assert trainer.update == trainer.learner.learn
    for _ in range(3):
        trainer.iterate()
    assert not trainer.read_metrics()[0]["diverged"]
