"""Discrete actions' kernels on the fused path (``categorical_terms``): the update loss's torch formulas are the
eager loss's log-probability, entropy and autograd's gradient of them, and the Triton kernels compute those
formulas (in Triton's interpreter on the CPU, and on a GPU); the rollout's sampling formulas are the heads'
(the kernel that samples: tests/test_fused_forward.py)."""

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from warpsim.train import categorical_terms, ppo

INTERPRETER = Path(__file__).with_name("interpret_categorical_terms.py")
CASES: list[dict[str, Any]] = [dict(rows=150, levels=[21, 21], seed=0, scale=3.0, dtype="bfloat16", row_entries=48),
         dict(rows=5, levels=[5], seed=1, scale=1.0, dtype="float32"),
         dict(rows=130, levels=[11, 11, 11], seed=2, scale=30.0, dtype="float32", row_entries=36),
         dict(rows=70, levels=[3, 3, 3], seed=3, scale=2.0, dtype="bfloat16", row_entries=16)]
"""train-ref's two components of 21 in bfloat16 over a block and a part, read in rows of 48 entries as the fused
path's networks write them (``StackedLinear.aligned``), in tiles of 8 entries; one of 5 on fewer rows than a
block, an entry a tile; three of 11 with saturated softmaxes, in float32 rows of 36 entries: tiles of 4, the
second component's first tile shared with the first's, the third's with the second's; three of 3 in bfloat16
rows of 16: the first tile shared by all three, the gradient's stored once the third has added its part."""


def eager_terms(logits: torch.Tensor, actions: torch.Tensor, levels: tuple[int, ...]):
    log_probs = ppo.split_heads(logits, levels)
    return ppo.log_prob(log_probs, actions), ppo.entropy(log_probs)


@pytest.mark.parametrize("levels", [(21, 21), (3, 5, 2)])
def test_the_op_is_the_eager_loss_and_its_gradient_autograds(levels):
    """Unequal components too: those take the formulas on a GPU as well."""
    generator = torch.Generator().manual_seed(len(levels))
    logits = (torch.randn((2, 9, sum(levels)), generator=generator) * 2).requires_grad_()
    actions = torch.stack([torch.randint(0, level, (2, 9), generator=generator) for level in levels], -1).int()
    log_prob_gradient, entropy_gradient = torch.randn((2, 2, 9), generator=generator)
    log_prob, entropy = eager_terms(logits, actions, levels)
    expected = torch.autograd.grad((log_prob, entropy), logits, (log_prob_gradient, entropy_gradient))[0]
    fused_log_prob, fused_entropy = categorical_terms.DifferentiableCategoricalTerms.apply(logits, actions,
                                                                                           list(levels))
    assert torch.equal(fused_log_prob, log_prob) and torch.equal(fused_entropy, entropy)
    gradient = torch.autograd.grad((fused_log_prob, fused_entropy), logits, (log_prob_gradient, entropy_gradient))[0]
    torch.testing.assert_close(gradient, expected, rtol=1e-5, atol=1e-6)


def test_the_gradient_takes_the_logits_dtype():
    logits = torch.randn(4, 10).to(torch.bfloat16)
    gradient = categorical_terms.categorical_terms_backward(torch.ones(4), torch.ones(4), logits,
                                                            torch.zeros(4, 2, dtype=torch.int32), [5, 5])
    assert gradient.dtype == torch.bfloat16 and gradient.shape == (4, 10)


def test_the_kernels_read_padded_rows_16_bytes_apart_and_other_rows_as_they_are():
    """Rows padded to 16-byte multiples, the padding in the tensor's storage (the fused path's logits): each
    component's columns in tiles of 16 bytes from a multiple of 16 bytes, the padding readable; rows as they are,
    an entry a tile, otherwise."""
    padded = categorical_terms.rows_of(torch.zeros(2, 9, 48, dtype=torch.bfloat16)[..., :42])
    assert categorical_terms.read_layout(padded) == {"ALIGN": 8, "ROW_ENTRIES": 48}
    assert categorical_terms.read_layout(categorical_terms.rows_of(torch.zeros(9, 48)[:, :33])) == {
        "ALIGN": 4, "ROW_ENTRIES": 48}
    as_they_are = {"ALIGN": 1, "ROW_ENTRIES": 42}
    assert categorical_terms.read_layout(torch.zeros(9, 42, dtype=torch.bfloat16)) == as_they_are
    # the last row's padding past the storage's end
    short = torch.zeros(8 * 48 + 42, dtype=torch.bfloat16).as_strided((9, 42), (48, 1))
    assert categorical_terms.read_layout(short) == as_they_are


def test_the_gradient_takes_rows_as_wide_as_padded_logits_and_as_theirs_otherwise():
    """Rows of the logits padded to 16-byte multiples and evenly apart: the gradient's as wide, their padding 0, in
    the op and in its fake (whose shape inductor holds the op to); other logits' rows as they are. Autograd's
    gradient is its logits' part."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    cases = [(48, 42, torch.bfloat16, 1, 48), (36, 33, torch.float32, 1, 36), (42, 42, torch.bfloat16, 1, 42),
             (45, 42, torch.bfloat16, 1, 42), (48, 42, torch.bfloat16, 2, 42)]  # every other run's: rows unevenly apart
    for width, entries, dtype, every, gradient_width in cases:
        for mode in (contextlib.nullcontext(), FakeTensorMode()):
            with mode:
                logits = torch.randn(4 * every, 9, width).to(dtype)[::every, :, :entries]
                gradient = categorical_terms.categorical_terms_backward(
                    torch.ones(logits.shape[:-1]), torch.ones(logits.shape[:-1]), logits,
                    torch.zeros((*logits.shape[:-1], 1), dtype=torch.int32), [entries])
            assert gradient.shape == (*logits.shape[:-1], gradient_width) and gradient.is_contiguous(), (width, mode)
            assert isinstance(mode, FakeTensorMode) or not gradient[..., entries:].any()
    logits = torch.randn(2, 3, 48)[..., :42].requires_grad_()
    actions = torch.zeros(2, 3, 2, dtype=torch.int32)
    log_prob, entropy = categorical_terms.DifferentiableCategoricalTerms.apply(logits, actions, [21, 21])
    assert torch.autograd.grad((log_prob + entropy).sum(), logits)[0].shape == (2, 3, 42)


@pytest.mark.slow(seconds=13)
def test_the_kernels_compute_as_the_formulas_in_tritons_interpreter():
    """The sums of a row's terms in another order (float32's last bits: the gradient within a few units of the last
    place of the largest); the gradient rounded once to the logits' dtype (bfloat16: within a unit of its last
    place)."""
    pytest.importorskip("triton")
    result = subprocess.run([sys.executable, str(INTERPRETER), json.dumps(CASES)], capture_output=True, text=True,
                            env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    for case, differences in zip(CASES, json.loads(result.stdout)):
        assert differences["gradient_dtype"] == f"torch.{case['dtype']}"
        assert differences["gradient_row_entries"] == case.get("row_entries", sum(case["levels"]))
        assert differences["padding"] == 0, "whole tiles store 0 past the components"
        assert differences["read_in_place"]
        assert differences["log_prob"] <= 1e-6 * case["scale"] * len(case["levels"]) * 10
        assert differences["entropy"] <= 1e-5
        ulp, units = (2 ** -7, 2) if case["dtype"] == "bfloat16" else (2 ** -23, 4)
        assert differences["gradient"] <= units * ulp * max(1.0, differences["largest_gradient"])


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case['levels']} {case['dtype']}")
def test_the_kernels_compute_as_the_formulas_on_a_gpu(case):
    sys.path.insert(0, str(INTERPRETER.parent))
    from interpret_categorical_terms import operands
    logits, actions, log_prob_gradient, entropy_gradient = operands(case)
    on_gpu = operands(case, "cuda")
    assert on_gpu[0].stride(-2) == case.get("row_entries", sum(case["levels"]))
    levels = case["levels"]
    for mine, theirs in zip(categorical_terms.categorical_terms(*on_gpu[:2], levels),
                            categorical_terms.categorical_terms(logits, actions, levels)):
        torch.testing.assert_close(mine.cpu(), theirs, rtol=1e-5, atol=1e-5 * case["scale"])
    gradient = categorical_terms.categorical_terms_backward(*on_gpu[2:], *on_gpu[:2], levels)
    expected = categorical_terms.categorical_terms_backward(log_prob_gradient, entropy_gradient, logits, actions,
                                                            levels)
    ulp = 2 ** -7 if case["dtype"] == "bfloat16" else 1e-6
    torch.testing.assert_close(gradient.cpu().float(), expected.float(), rtol=2 * ulp, atol=2 * ulp)


def test_the_sampling_formulas_draw_as_the_heads_do():
    """The actions and log-probabilities of ``CategoricalHeads.sample_with`` and ``log_prob`` from the same
    draws: a draw picks the level whose span of the cumulative probabilities holds it (probabilities 0.1, 0.2,
    0.3 and 0.4: 0.05 the first, 0.15 the second, 0.45 the third, 0.95 the last)."""
    from warpsim.train.action_heads import CategoricalHeads
    head = CategoricalHeads((4, 4))
    first = torch.tensor([0.1, 0.2, 0.3, 0.4]).log().expand(4, 4)
    logits = torch.cat([first, torch.randn(4, 4, generator=torch.Generator().manual_seed(5))], 1)
    uniforms = [torch.tensor([0.05, 0.15, 0.45, 0.95]), torch.tensor([0.0, 0.3, 0.6, 1.0 - 2 ** -24])]
    actions, log_prob = categorical_terms.sample(logits, uniforms, [4, 4])
    assert actions.dtype == torch.int32 and actions[:, 0].tolist() == [0, 1, 2, 3]
    assert actions[0, 1] == 0 and actions[3, 1] == 3
    assert torch.equal(actions, head.sample_with(logits, tuple(uniforms)))
    assert torch.equal(log_prob, head.log_prob(logits, actions))
