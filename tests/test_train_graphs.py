"""The trainer's graphs setting: captured rollouts on a GPU, eager ones elsewhere and under DDP."""

import json

import pytest
import torch

from warpsim.cli import main
from warpsim.errors import InvalidValueError
from warpsim.train import TrainConfig, Trainer
from warpsim.train.graphs import resolve_graphs
from warpsim.train.loop import train

GRID = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=8),
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
    assert trainer.launches == "eager" and trainer.rollout == trainer.collect
    assert json.loads((tmp_path / "run" / "config.json").read_text())["graphs"] == "auto"


def gpu_config(**changes) -> TrainConfig:
    settings = dict(env="tag_continuous", num_envs=16, rollout_steps=8, backend="cuda", epochs=2, minibatches=2,
                    iterations=6, env_params=dict(num_taggers=2, num_runners=6, episode_length=5,
                                                  use_full_observation=False, num_other_agents_observed=3))
    return TrainConfig(**{**settings, **changes})


@pytest.mark.gpu
@pytest.mark.parametrize("changes", [{}, {"opponents": {"runner": "random"}, "stack_observations": 2},
                                     {"precision": "fp32"}], ids=["self-play", "random runners, stacked", "fp32"])
def test_a_captured_rollout_trains_as_the_eager_one_on_the_gpu(changes):
    """Same seed: the graph path gives the eager path's trajectory and networks. The rollouts'
    actions and the environment's integer state must match exactly; floats to 1e-5 (a graph
    replays the eager kernels, so bit for bit is expected, but cuBLAS may choose another
    algorithm when it is captured)."""
    graphed, eager = Trainer(gpu_config(graphs="on", **changes)), Trainer(gpu_config(graphs="off", **changes))
    assert graphed.launches == "cuda-graph" and eager.launches == "eager"
    for _ in range(4):  # eager warm-up, capture and replay, then two replays
        graphed.iterate()
        eager.iterate()
        for mine, theirs in zip(graphed.storage.values(), eager.storage.values()):
            assert torch.equal(mine.actions, theirs.actions)
        assert torch.equal(graphed.env.state.episode, eager.env.state.episode)
        for mine, theirs in zip(graphed.storage.values(), eager.storage.values()):
            torch.testing.assert_close(mine.log_probs, theirs.log_probs, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(mine.values, theirs.values, rtol=1e-5, atol=1e-5)
    for mine, theirs in zip(graphed.policies.parameters(), eager.policies.parameters()):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-5)
    assert graphed.read_metrics()["episodes"] == eager.read_metrics()["episodes"] > 0
    assert torch.equal(graphed.generator.get_state(), eager.generator.get_state())


@pytest.mark.gpu
def test_a_captured_rollout_never_waits_for_the_device():
    trainer = Trainer(gpu_config(graphs="on", opponents={"runner": "random"}))
    trainer.iterate()  # eager warm-up
    trainer.iterate()  # capture (synchronises once) and replay
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        trainer.iterate()
        trainer.iterate()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert trainer.read_metrics()["iteration"] == 4


@pytest.mark.gpu
def test_a_resumed_graph_run_continues_as_an_uninterrupted_one(tmp_path):
    config = gpu_config(graphs="on", iterations=6, checkpoint_every=3)
    whole = train(config, tmp_path / "whole")
    train(config, tmp_path / "parts", stop_after=3)
    resumed = train(None, tmp_path / "parts", resume=True)
    for mine, theirs in zip(resumed.policies.parameters(), whole.policies.parameters()):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-5)
    assert torch.equal(resumed.env.state.episode, whole.env.state.episode)
