"""bfloat16 observations (TagContinuousParams.observation_dtype): the rounding, the kernels
against the reference bit for bit, and the trainer, ``warpsim check`` and evaluation on them."""

from typing import Any

import numpy as np
import pytest
import torch
from helpers import random_actions, write_state
from numba import cuda
from tag_continuous_helpers import random_state, twin_envs

import warpsim
from warpsim.analysis.play import Player, evaluate
from warpsim.check import check
from warpsim.cli import main
from warpsim.envs.tag_continuous import TagContinuousParams
from warpsim.errors import InvalidValueError
from warpsim.kernels.bfloat16 import bfloat16_bits, bfloat16_bits_device
from warpsim.train import TrainConfig, Trainer

EDGE_BITS = np.array([
    0x3F808000, 0x3F818000,  # ties: down to the even 0x3F80, up to the even 0x3F82
    0x3F807FFF, 0x3F808001,  # just below and above a tie
    0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF,  # the largest that stays finite; a tie and the largest float32, to inf
    0xFF7FFFFF, 0x80000000, 0x00000000,  # the most negative float32 (to -inf), -0 and +0
    0x00000001, 0x00008000, 0x00018000, 0x007FFFFF, 0x00800000, 0x807FFFFF,  # subnormals and the smallest normal
    0x7F800000, 0xFF800000,  # inf, -inf
], np.uint32)
NAN_BITS = np.array([0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0xFF800001], np.uint32)
"""Quiet and signalling NaNs; two hold their payload only in the half rounding drops."""
SMALL: dict[str, Any] = dict(num_taggers=2, num_runners=3, episode_length=4, tagging_distance=0.2)
BFLOAT16: dict[str, Any] = dict(observation_dtype="bfloat16")


def torch_bits(values: np.ndarray) -> np.ndarray:
    return torch.from_numpy(values).to(torch.bfloat16).view(torch.int16).numpy()


def as_bfloat16(bits: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(bits).view(torch.bfloat16)


@cuda.jit
def round_on_device(values, out):
    """values float32[M]; out int16[M] (written)."""
    k = cuda.grid(1)
    if k < values.shape[0]:
        out[k] = bfloat16_bits_device(values[k])


def test_rounding_is_torchs_at_the_edges_and_keeps_nan():
    values = EDGE_BITS.view(np.float32)
    assert np.array_equal(bfloat16_bits(values), torch_bits(values))
    assert as_bfloat16(bfloat16_bits(values[:2])).tolist() == [1.0, 1.015625]
    assert torch.isinf(as_bfloat16(bfloat16_bits(values[6:8]))).all()
    assert torch.isnan(as_bfloat16(bfloat16_bits(NAN_BITS.view(np.float32)))).all()


def test_rounding_is_torchs_on_random_bits_and_the_device_function_agrees():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    finite = ~np.isnan(values)
    assert np.array_equal(bfloat16_bits(values)[finite], torch_bits(values)[finite])
    inputs = np.concatenate([EDGE_BITS, NAN_BITS, rng.integers(0, 2**32, 10, dtype=np.uint64).astype(np.uint32)])
    inputs = inputs.view(np.float32)
    out = np.zeros(len(inputs), np.int16)
    round_on_device[1, 32](inputs, out)
    assert np.array_equal(out, bfloat16_bits(inputs))


@pytest.mark.parametrize("observation", [
    dict(use_full_observation=True, observe_own_state=True),
    dict(use_full_observation=False, num_other_agents_observed=3, neighbour_search="grid", observe_own_state=True),
], ids=["full", "partial"])
def test_kernels_store_the_references_bits_which_are_float32_observations_rounded(observation):
    params = dict(num_taggers=2, num_runners=5, grid_length=4.0, tagging_distance=0.15, episode_length=4,
                  **observation)
    reference, kernels = twin_envs(2, seed=7, **params, **BFLOAT16)
    in_float32 = warpsim.make("tag_continuous", 2, backend="numpy", seed=7, **params)
    rng = np.random.default_rng(1)
    state = random_state(reference, rng)
    for env in (reference, kernels, in_float32):
        write_state(env, state)
    for step in range(5):
        actions = random_actions(reference, rng)
        for env in (reference, kernels, in_float32):
            env.step(actions)
        assert kernels.observations.dtype == torch.bfloat16
        assert torch.equal(kernels.observations.view(torch.int16), reference.observations.view(torch.int16)), step
        assert torch.equal(reference.observations, in_float32.observations.to(torch.bfloat16)), step
        assert torch.equal(kernels.rewards, reference.rewards) and torch.equal(kernels.done, reference.done)


def test_an_unknown_observation_dtype_is_refused_naming_the_choices():
    with pytest.raises(InvalidValueError, match="observation_dtype='float16' is not allowed; choose one of float32, bfloat16"):
        TagContinuousParams(observation_dtype="float16")
    assert warpsim.make("tag_continuous", 1, backend="numpy", **BFLOAT16).array_bytes() < \
        warpsim.make("tag_continuous", 1, backend="numpy").array_bytes()


@pytest.mark.parametrize("observation", [dict(use_full_observation=True),
                                         dict(use_full_observation=False, num_other_agents_observed=2)],
                         ids=["full", "partial"])
def test_check_compares_bfloat16_observations_bit_for_bit(observation):
    report = check("tag_continuous", num_envs=2, steps=6, rtol=0.0, atol=0.0, **SMALL, **observation, **BFLOAT16)
    assert report.consistent and report.episodes_ended >= 2, str(report)


def test_check_command_line_takes_the_observation_dtype(capsys):
    assert main(["check", "tag_continuous", "--steps", "3", "--set", 'observation_dtype="bfloat16"']) == 0
    assert capsys.readouterr().out.startswith("consistent: tag_continuous")


@pytest.mark.parametrize("precision, inputs", [("bf16", torch.bfloat16), ("fp32", torch.float32)])
def test_training_and_evaluation_read_bfloat16_observations(precision, inputs):
    trainer = Trainer(TrainConfig(env="tag_continuous", env_params=dict(SMALL, **BFLOAT16), num_envs=3,
                                  rollout_steps=4, backend="numpy", precision=precision))
    trainer.iterate()
    assert trainer.env.observations.dtype == torch.bfloat16
    assert trainer.inputs[0].peek().dtype == trainer.storage["runner"].observations.dtype == inputs
    assert trainer.read_metrics()[0]["iteration"] == 1
    result = evaluate(Player(trainer.env, trainer.run_policies()), episodes=3)
    assert result.episodes >= 3 and np.isfinite(result.returns["tagger"])
