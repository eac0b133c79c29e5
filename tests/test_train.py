"""The trainer: the PPO ratio, resume, run directories, bad input and divergence."""

import json
from typing import Any

import pytest
import torch

from warpsim.cli import main
from warpsim.errors import RunFileError
from warpsim.train import TrainConfig, Trainer, TrainingDiverged, checkpoint
from warpsim.train.config import build_config, field_docs
from warpsim.train.learner import UPDATE_STATS
from warpsim.train.loop import train

GRID: dict[str, Any] = dict(env="tag_gridworld", env_params=dict(num_taggers=2, grid_length=5, episode_length=8),
            num_envs=4, rollout_steps=8, backend="numpy")
TAG: dict[str, Any] = dict(env="tag_continuous", env_params=dict(num_taggers=1, num_runners=3, episode_length=10),
           num_envs=3, rollout_steps=6, backend="numpy", stack_observations=2)


def parameters(trainer: Trainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trainer.policies.parameters()]


@pytest.mark.parametrize("settings", [GRID, TAG], ids=["grid", "tag"])
def test_ratio_is_one_on_the_first_minibatch_only(settings):
    trainer = Trainer(TrainConfig(**settings, epochs=2, minibatches=3))
    trainer.iterate()
    deviation = trainer.learner.update_stats[0, :, UPDATE_STATS.index("ratio_deviation")]  # the one run's
    assert deviation[0].item() == 0.0, "the first minibatch sees the policy that collected the rollout"
    assert (deviation[1:] > 0).all(), "later minibatches see an updated policy"


def test_one_policy_per_role_and_actions_go_into_the_environment_buffer():
    trainer = Trainer(TrainConfig(**TAG))
    assert trainer.policies.role_names == ["runner", "tagger"]
    assert len(trainer.policies.networks) == 2
    trainer.iterate()
    # Run 0's last step; the tagger is agent 0.
    assert trainer.storage["tagger"].actions[0, -1].eq(trainer.env.actions[:, :1]).all()
    assert trainer.storage["runner"].actions[0, -1].eq(trainer.env.actions[:, 1:]).all()
    assert trainer.storage["runner"].observations.shape == (1, 6, 3, 3, 2 * trainer.env.spec.observation_size)


def test_resumed_run_matches_an_uninterrupted_one(tmp_path):
    config = TrainConfig(**TAG, iterations=4, checkpoint_every=100, log_every=1)
    stopped = train(config, tmp_path / "stopped", stop_after=2, progress=None)
    assert stopped.iteration == 2 and checkpoint.load(tmp_path / "stopped")["iteration"] == 2
    resumed = train(None, tmp_path / "stopped", resume=True, progress=None)
    straight = train(config, tmp_path / "straight", progress=None)
    assert resumed.iteration == straight.iteration == 4
    for a, b in zip(parameters(resumed), parameters(straight)):
        assert torch.equal(a, b)
    assert not torch.equal(parameters(stopped)[0], parameters(straight)[0])
    lines = (tmp_path / "stopped" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["iteration"] for line in lines] == [1, 2, 3, 4]


def test_run_directory_holding_a_run_is_not_overwritten(tmp_path):
    config = TrainConfig(**GRID, iterations=1)
    train(config, tmp_path, progress=None)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir() if path.is_file()}
    with pytest.raises(RunFileError, match="already holds a run; continue it with --resume"):
        train(config, tmp_path, progress=None)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir() if path.is_file()} == before


def test_checkpoint_from_another_environment_is_refused_and_nothing_is_written(tmp_path):
    train(TrainConfig(**GRID, iterations=1), tmp_path / "grid", progress=None)
    train(TrainConfig(**TAG, iterations=1), tmp_path / "tag", progress=None)
    (tmp_path / "tag" / "checkpoint.pt").write_bytes((tmp_path / "grid" / "checkpoint.pt").read_bytes())
    metrics = (tmp_path / "tag" / "metrics.jsonl").read_text()
    with pytest.raises(ValueError, match="another environment or shape: env 'tag_gridworld' there, "
                                         "'tag_continuous' here"):
        train(None, tmp_path / "tag", resume=True, iterations=3, progress=None)
    assert (tmp_path / "tag" / "metrics.jsonl").read_text() == metrics


def test_evaluating_with_other_shapes_is_refused(tmp_path, capsys):
    train(TrainConfig(**GRID, iterations=1), tmp_path, progress=None)
    code = main(["evaluate", str(tmp_path), "--set", "num_taggers=3", "--backend", "numpy"])
    assert code == 2
    assert ("observation_size 13 there, 17 here (its environment's parameters: num_taggers=2 there, 3 here)"
            in capsys.readouterr().err), "the parameter that changed the shape is named, and no other"


def test_nan_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    original = Trainer.iterate

    def poisoned(self):
        if self.iteration == 2:
            next(self.policies.parameters()).data.fill_(float("nan"))
        original(self)

    monkeypatch.setattr(Trainer, "iterate", poisoned)
    # The advice must be one the command line takes: --resume refuses a new learning rate.
    with pytest.raises(TrainingDiverged, match="NaN or infinite by iteration 3.*checkpoint.pt, is kept.*start a "
                                               "new run with them"):
        train(TrainConfig(**GRID, iterations=6, checkpoint_every=1, log_every=1), tmp_path, progress=None)
    saved = checkpoint.load(tmp_path)
    assert saved["iteration"] == 2
    assert all(torch.isfinite(value).all() for value in saved["policies"].values())


def test_unknown_config_fields_and_bad_values_are_clear_errors(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"unknown config field\(s\) lr; valid: env, env_params"):
        build_config({"lr": 0.1})
    with pytest.raises(ValueError, match="config field gamma=1.5 is not allowed; give a number in"):
        build_config({"gamma": 1.5})
    config_file = tmp_path / "config.toml"
    config_file.write_text('env = "tag_gridworld"\nlearning_rat = 0.01\n')
    code = main(["train", "--config-file", str(config_file), "--run-dir", str(tmp_path / "run")])
    assert code == 2 and "unknown config field(s) learning_rat" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
    code = main(["train", "--set", "num_runers=3", "--run-dir", str(tmp_path / "run")])
    assert code == 2 and "num_runers" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_settings_layer_preset_then_file_then_flags(tmp_path):
    config_file = tmp_path / "settings.json"
    config_file.write_text(json.dumps({"num_envs": 5, "learning_rate": 0.01, "env_params": {"episode_length": 9}}))
    code = main(["train", "--config", "grid-small", "--config-file", str(config_file), "--learning-rate", "0.02",
                 "--set", "grid_length=6", "--iterations", "1", "--rollout-steps", "4", "--lr-schedule", "constant",
                 "--run-dir", str(tmp_path / "run"), "--quiet", "--backend", "numpy"])
    assert code == 0
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert (saved["env"], saved["num_envs"], saved["learning_rate"], saved["lr_schedule"]) == (
        "tag_gridworld", 5, 0.02, "constant")
    assert saved["env_params"] == dict(num_taggers=2, grid_length=6, episode_length=9, use_full_observation=False)


def test_every_config_field_is_documented():
    docs = field_docs()
    assert set(docs) == set(TrainConfig.__dataclass_fields__)
    assert all(len(doc) > 10 for doc in docs.values())


def test_evaluate_and_render_a_trained_checkpoint(tmp_path, capsys):
    assert main(["train", "--config", "grid-small", "--iterations", "2", "--num-envs", "4", "--rollout-steps", "8",
                 "--set", "episode_length=5", "--run-dir", str(tmp_path / "run"), "--backend", "numpy"]) == 0
    progress = capsys.readouterr().err
    assert "2/2" in progress and "steps/s" in progress and "return runner" in progress and "tagger" in progress
    assert main(["evaluate", str(tmp_path / "run"), "--episodes", "20", "--num-envs", "8", "--random", "runner",
                 "--compare-random", "--backend", "numpy"]) == 0
    out = capsys.readouterr().out
    assert "mean return of a tagger (policy)" in out and "tags per episode" in out and "ratios to random play" in out
    gif = tmp_path / "episode.gif"
    assert main(["render", str(tmp_path / "run"), "--out", str(gif), "--max-steps", "5", "--backend", "numpy"]) == 0
    from PIL import Image
    with Image.open(gif) as image:
        assert image.n_frames >= 2


@pytest.mark.gpu
@pytest.mark.parametrize("opponents", [{}, {"runner": "random"}], ids=["self-play", "random runners"])
def test_rollout_and_update_never_wait_for_the_device(opponents):
    config = TrainConfig(env="tag_continuous", num_envs=64, rollout_steps=8, backend="cuda", opponents=opponents,
                         env_params=dict(num_taggers=2, num_runners=20, use_full_observation=False,
                                         num_other_agents_observed=4))
    trainer = Trainer(config)
    trainer.iterate()  # compiles the kernels and warms up
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        trainer.iterate()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert trainer.precision == "bf16"
    tagger = trainer.storage["tagger"]
    assert tagger.log_probs.dtype == torch.float32 and tagger.actions.dtype == torch.int32
    assert trainer.read_metrics()[0]["iteration"] == 2


def test_too_few_samples_for_the_minibatches_is_a_clear_error():
    with pytest.raises(ValueError, match="a rollout holds 8 samples of role 'runner'.*too few for 16 minibatches"):
        Trainer(TrainConfig(**{**GRID, "num_envs": 1}, minibatches=16))


def test_under_bf16_observations_are_stored_as_the_networks_round_them():
    trainer = Trainer(TrainConfig(**TAG, precision="bf16"))
    trainer.iterate()
    stored = trainer.storage["runner"].observations
    assert stored.dtype == torch.bfloat16
    assert Trainer(TrainConfig(**TAG)).storage["runner"].observations.dtype == torch.float32
    # What the networks compute from the stored copy is what they computed from the float32 inputs.
    inputs = trainer.inputs[0].peek()
    runner = trainer.policy_roles["runner"].of(inputs).flatten(0, 1)[None]  # run 0
    network = trainer.policies.network("runner")
    with torch.no_grad(), trainer.autocast():
        from_float32, from_stored = network(runner), network(runner.to(torch.bfloat16))
    assert all(torch.equal(a, b) for a, b in zip(from_float32, from_stored))
    assert not torch.equal(runner, runner.to(torch.bfloat16).float()), "the rounding happened"


def test_the_memory_estimate_counts_bf16_observations_at_two_bytes_in_rows_padded_as_the_fused_path_stores_them():
    from warpsim.registry import make
    from warpsim.train import fused_forward, storage
    config = TrainConfig(**TAG)
    spec = make(config.env, 1, backend="numpy", **config.env_params).spec
    samples = config.rollout_steps * config.num_envs * spec.num_agents
    inputs = spec.observation_size * config.stack_observations
    assert inputs % fused_forward.ROW_ALIGNMENT
    fp32, bf16 = (storage.training_bytes(config, spec, 0, precision) for precision in ("fp32", "bf16"))
    assert fp32 - bf16 == samples * (4 * inputs - 2 * fused_forward.aligned_size(inputs))
