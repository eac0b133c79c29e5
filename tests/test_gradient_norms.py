"""The update's gradient clipping (``learner.clip_gradients``) and its norms as one operation
(``gradient_norms``): each run clipped as torch clips its parameters alone, the CPU's arithmetic as it was."""

import pytest
import torch

from warpsim.bench import kernel_counts
from warpsim.train import gradient_norms
from warpsim.train.learner import clip_gradients

SHAPES = [(64, 71), (64,), (1, 64, 64), (1, 64), (42, 64), (42,)]
"""A train-ref actor's weights and biases, each run's part."""


def gradients(runs: int, seed: int, scales: list[float]) -> list[list[torch.Tensor]]:
    """Groups of gradients [runs, ...] of ``SHAPES``, group g's entries of about ``scales[g]``."""
    generator = torch.Generator().manual_seed(seed)
    return [[torch.randn((runs, *shape), generator=generator) * scale for shape in SHAPES] for scale in scales]


@pytest.mark.parametrize("runs", [1, 3])
def test_each_run_and_group_is_clipped_as_torch_clips_its_parameters_alone(runs):
    groups = gradients(runs, 0, [1e-4, 1.0])
    max_norm = torch.tensor([0.5, 50.0, 5.0][:runs])
    clipped = [[gradient.clone() for gradient in group] for group in groups]
    clip_gradients(clipped, max_norm)
    for run in range(runs):
        for group, mine in zip(groups, clipped):
            alone = [torch.nn.Parameter(gradient[run].clone()) for gradient in group]
            for parameter in alone:
                parameter.grad = parameter.detach().clone()
            torch.nn.utils.clip_grad_norm_(alone, float(max_norm[run]))
            for parameter, gradient in zip(alone, mine):
                torch.testing.assert_close(gradient[run], parameter.grad, rtol=2e-6, atol=0)
    small = torch.cat([gradient.flatten(1) for gradient in groups[0]], 1).norm(dim=1)
    assert (small < max_norm).all() and all(torch.equal(a, b) for a, b in zip(clipped[0], groups[0])), \
        "a group within its norm is left as it is"
    assert not torch.equal(clipped[1][0], groups[1][0])


def test_the_norms_on_a_cpu_are_each_gradients_own_norm_bit_for_bit_and_the_gpus_form_agrees():
    """On a CPU the op is the norms one gradient at a time, as the clipping computed them; its GPU form
    (torch's multi-tensor norm of every run's part), run here on the CPU, the same to float32 rounding."""
    group = gradients(3, 1, [1.0])[0]
    norms = gradient_norms.gradient_norms(group)
    assert norms.shape == (3, len(SHAPES))
    assert torch.equal(norms, torch.stack([gradient.flatten(1).norm(dim=1) for gradient in group], dim=1))
    torch.testing.assert_close(gradient_norms.launch(group), norms, rtol=1e-6, atol=0)


def test_the_norms_count_as_the_kernels_a_gpu_launches_for_them():
    """A multi-tensor norm (its fill, its pass and its finishing pass) and the stack of the norms, whatever
    the gradients; the gradients read once, the norms written."""
    group = gradients(3, 2, [1.0])[0]
    counter = kernel_counts.Counter()
    with counter:
        gradient_norms.gradient_norms(group)
    assert counter.tally.kernels == kernel_counts.FOREACH_NORM_LAUNCHES + 1
    read = sum(gradient.numel() for gradient in group) * 4
    assert read < counter.tally.bytes < read + 1000


@pytest.mark.gpu
def test_the_norms_on_a_gpu_agree_with_the_cpus():
    group = gradients(3, 3, [1.0])[0]
    on_gpu = gradient_norms.gradient_norms([gradient.cuda() for gradient in group])
    torch.testing.assert_close(on_gpu.cpu(), gradient_norms.gradient_norms(group), rtol=1e-5, atol=0)
