"""The trainer's policy_device: networks on another device than the environments."""

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import load_script

from warpsim.cli import main
from warpsim.errors import InvalidValueError, UnavailableError
from warpsim.train import TrainConfig, Trainer, run_policies
from warpsim.train.distributed import World
from warpsim.train.graphs import resolve_graphs
from warpsim.train.loop import train
from warpsim.train.placement import check_single_process, place_training

TAG: dict[str, Any] = dict(env="tag_continuous", env_params=dict(num_taggers=1, num_runners=3, episode_length=10),
           num_envs=3, rollout_steps=6, backend="numpy", stack_observations=2)
no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a CUDA GPU")


@pytest.mark.parametrize("value", ["GPU", "cuda:", "cuda:x", "cuda:-1", "CPU", "", None, 0])
def test_policy_device_must_be_auto_cpu_cuda_or_cuda_n(value):
    with pytest.raises(InvalidValueError, match=rf"config field policy_device={value!r} is not allowed; choose "
                                                r"auto, cpu, cuda or cuda:N \(N in \[0, 127\], no leading zero\)"):
        TrainConfig(**TAG, policy_device=value)


@pytest.mark.parametrize("value", ["auto", "cpu", "cuda", "cuda:0", "cuda:3"])
def test_policy_device_names_are_accepted(value):
    assert TrainConfig(**TAG, policy_device=value).policy_device == value


@no_gpu
@pytest.mark.parametrize("value", ["cuda", "cuda:1"])
def test_a_cuda_policy_device_without_a_gpu_is_refused(value):
    with pytest.raises(UnavailableError, match=rf"policy_device={value!r} needs a CUDA GPU, and none was found; "
                                               r"use policy_device='cpu' or 'auto'"):
        Trainer(TrainConfig(**TAG, policy_device=value))


@no_gpu
def test_the_cli_refuses_a_cuda_policy_device_before_anything_is_written(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main(["train", "--env", "tag_gridworld", "--backend", "numpy", "--num-envs", "2", "--iterations", "1",
                 "--policy-device", "cuda", "--run-dir", str(run_dir), "--quiet"])
    assert code == 2
    assert "policy_device='cuda' needs a CUDA GPU" in capsys.readouterr().err
    assert not run_dir.exists()


def test_cpu_policy_device_on_cpu_environments_is_the_default_bit_for_bit():
    default, explicit = Trainer(TrainConfig(**TAG)), Trainer(TrainConfig(**TAG, policy_device="cpu"))
    assert not default.hybrid and not explicit.hybrid and explicit.mirror is None
    assert explicit.collector.step_actions[0] is explicit.env.actions
    for _ in range(3):
        default.iterate()
        explicit.iterate()
    for mine, theirs in zip(explicit.policies.parameters(), default.policies.parameters()):
        assert torch.equal(mine, theirs)
    assert torch.equal(explicit.env.state.episode, default.env.state.episode)
    assert torch.equal(explicit.storage["runner"].actions, default.storage["runner"].actions)


@pytest.mark.parametrize("opponents", [{}, {"tagger": "random"}], ids=["self-play", "random taggers"])
def test_the_hybrid_bookkeeping_trains_as_one_device(monkeypatch, opponents):
    """The hybrid path (separate action buffer, rollout mirror, per-role indices on the networks'
    device) run with 'cpu:0' as the networks' device, which torch tells apart from 'cpu'."""
    single = Trainer(TrainConfig(**TAG, opponents=opponents))
    monkeypatch.setattr("warpsim.train.placement.resolve_policy_device", lambda setting, env: torch.device("cpu", 0))
    hybrid = Trainer(TrainConfig(**TAG, opponents=opponents))
    assert hybrid.hybrid and hybrid.mirror is not None and hybrid.collector.step_actions[0] is not hybrid.env.actions
    for _ in range(3):
        single.iterate()
        hybrid.iterate()
    for mine, theirs in zip(hybrid.policies.parameters(), single.policies.parameters()):
        assert torch.equal(mine, theirs)
    assert torch.equal(hybrid.env.state.episode, single.env.state.episode)
    assert torch.equal(hybrid.env.actions, single.env.actions)
    assert all(torch.equal(copy, source) for copy, source in zip(hybrid.mirror.copies, hybrid.mirror.sources))


def test_config_json_and_resume_keep_the_policy_device(tmp_path):
    config = TrainConfig(**TAG, iterations=3, policy_device="cpu", checkpoint_every=100)
    train(config, tmp_path / "run", stop_after=1, progress=None)
    assert json.loads((tmp_path / "run" / "config.json").read_text())["policy_device"] == "cpu"
    resumed = train(None, tmp_path / "run", resume=True, progress=None)
    assert resumed.config.policy_device == "cpu" and resumed.iteration == 3


def test_a_hybrid_placement_rolls_out_eagerly():
    cuda = torch.device("cuda")
    assert resolve_graphs("auto", cuda, 1, hybrid=True) is False
    assert resolve_graphs("auto", cuda, 1, hybrid=False) is True
    with pytest.raises(InvalidValueError, match="graphs='on' needs the networks on the environments' device"):
        resolve_graphs("on", cuda, 1, hybrid=True)


def test_a_hybrid_placement_runs_in_one_process():
    check_single_process(torch.device("cpu"), torch.device("cpu"), 4)
    check_single_process(torch.device("cpu"), torch.device("cuda", 0), 1)
    with pytest.raises(InvalidValueError, match=r"policy_device='cuda:0' differs from the environments' device "
                                                r"\(cpu\), which runs in one process only \(now 2\)"):
        check_single_process(torch.device("cpu"), torch.device("cuda", 0), 2)


# ----- on a GPU ------------------------------------------------------------------------
GPU_TAG: dict[str, Any] = dict(env="tag_continuous", num_envs=8, rollout_steps=8, backend="numpy", epochs=2, minibatches=1,
               precision="fp32", env_params=dict(num_taggers=2, num_runners=6, episode_length=5,
                                                 use_full_observation=False, num_other_agents_observed=3))


@pytest.mark.gpu
@pytest.mark.parametrize("changes", [{}, {"stack_observations": 2}], ids=["plain", "stacked"])
def test_a_hybrid_iteration_equals_the_one_device_iteration(monkeypatch, changes):
    """NumPy environments with CUDA networks against all on the CPU, from one seed. The CUDA and
    CPU generators draw different numbers, so both sample from the same CPU noise here; one
    minibatch per epoch makes the shuffle only reorder a mean."""
    original = run_policies.roles_noise
    noise: dict[str, torch.Generator] = {}

    def noise_from_the_cpu(heads, rows, generator, device, out=None):
        """The draws of a CPU generator of its own for each device, moved there (eager networks read them
        anywhere, so ``out``, the fused kernel's buffer, is left alone)."""
        cpu = noise.setdefault(torch.device(device).type, torch.Generator().manual_seed(7))
        return [tuple(draws.to(device) for draws in role) for role in original(heads, rows, cpu, torch.device("cpu"))]

    monkeypatch.setattr(run_policies, "roles_noise", noise_from_the_cpu)
    # Eager networks on both sides: this test is about where they run, not about compiled rounding.
    hybrid = Trainer(TrainConfig(**GPU_TAG, **changes, policy_device="cuda", compile="off"))
    single = Trainer(TrainConfig(**GPU_TAG, **changes, policy_device="cpu", compile="off"))
    assert hybrid.hybrid and hybrid.device.type == "cuda" and hybrid.env.device.type == "cpu"
    assert not single.hybrid and hybrid.launches == "eager"
    for _ in range(2):
        hybrid.iterate()
        single.iterate()
        for mine, theirs in zip(hybrid.storage.values(), single.storage.values()):
            assert torch.equal(mine.actions.cpu(), theirs.actions)
        assert torch.equal(hybrid.env.state.episode, single.env.state.episode)
        for mine, theirs in zip(hybrid.storage.values(), single.storage.values()):
            torch.testing.assert_close(mine.log_probs.cpu(), theirs.log_probs, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(mine.values.cpu(), theirs.values, rtol=1e-4, atol=1e-5)
    for hybrid_parameter, single_parameter in zip(hybrid.policies.parameters(), single.policies.parameters()):
        torch.testing.assert_close(hybrid_parameter.cpu(), single_parameter, rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("opponents", [{}, {"runner": "random"}], ids=["self-play", "random runners"])
def test_a_hybrid_iteration_makes_only_the_documented_copies(opponents):
    """Per step one blocking copy of the inputs to the GPU and one of the actions back, plus one
    of the last inputs per rollout; the rollout moves over in non-blocking copies from pinned memory.
    Each blocking copy waits for the device, which the sync debug mode reports once."""
    trainer = Trainer(TrainConfig(**{**GPU_TAG, "precision": "auto"}, opponents=opponents, policy_device="cuda"))
    assert trainer.mirror is not None and trainer.mirror.non_blocking
    assert all(buffer.is_pinned() for buffer in trainer.mirror.sources)
    trainer.iterate()  # warm-up
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trainer.iterate()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    waits = [w for w in caught if "synchroniz" in str(w.message)]
    assert len(waits) == 2 * trainer.config.rollout_steps + 1


def placement_script():
    return load_script(Path(__file__).parent.parent / "benchmarks" / "placement.py")


@pytest.mark.slow(seconds=12)
@no_gpu
def test_the_placement_benchmark_times_the_cpu_placement_alone_without_a_gpu(tmp_path, capsys):
    code = placement_script().main(["--sizes", "tag-small", "--hidden", "64", "256", "--steps", "4",
                                    "--repeats", "1", "--results-dir", str(tmp_path)])
    assert code == 0
    assert "no CUDA GPU here: timing all-cpu only (not numpy-env-gpu-networks, all-gpu)" in capsys.readouterr().err
    (results,) = tmp_path.glob("*.json")
    records = json.loads(results.read_text())
    assert [(r["placement"], r["networks"]["hidden_size"], r["policy_device"]) for r in records] == [
        ("all-cpu", 64, "cpu"), ("all-cpu", 256, "cpu")]
    assert all(r["tier"] == "train" and r["config"] == "tag-small" for r in records)


def test_training_is_placed_once_where_its_environments_and_networks_run():
    env, networks = place_training("numpy", "auto", World())
    assert env.backend == "numpy" and env.torch_device == networks == torch.device("cpu")
    trainer = Trainer(TrainConfig(**TAG))
    assert trainer.env_placement == trainer.env.placement and trainer.device == trainer.env.device
    assert not trainer.hybrid
