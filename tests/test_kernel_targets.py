"""The networks' and the loss's Triton kernels built, with no GPU, for GPUs other than the sm_90 of
tests/test_actor_critic_resources.py: every GPU that the fused path runs them on under bf16
(``placement.BFLOAT16_CAPABILITY`` and newer) builds them, within its shared memory a block; the
GPUs before lack an instruction of the networks' kernels, which is why the trainer refuses them there,
and build the loss's, which the eager path runs on any GPU."""

import re
from pathlib import Path

import pytest
from helpers import load_script

from warpsim.train import fused_forward, fused_sampling
from warpsim.train.placement import BFLOAT16_CAPABILITY

pytest.importorskip("triton")

NETWORK_KERNELS = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "network_kernel_resources.py")
MOST_SHARED_BYTES_A_BLOCK = {80: 163 * 1024, 86: 99 * 1024, 100: 227 * 1024}
"""An A100's; an RTX 30x0's (the least of the GPUs admitted, as an RTX 40x0's and 50x0's), where Triton multiplies
with mma.sync as on an A100; a B200's, where it takes Blackwell's own instructions."""


def train_ref_launches() -> dict[str, dict]:
    """Each kernel as the fused path launches it at train-ref's shapes, gradients' kernels included, and the
    networks' at width 128 (tag-chase's) too."""
    forward_stages, sampled_stages = fused_forward.STAGES, fused_sampling.STAGES
    return {
        **{f"forward, width {hidden}": NETWORK_KERNELS.forward_launch(hidden, forward_stages, True)
           for hidden in (64, 128)},
        **{f"forward and sampling, width {hidden}": NETWORK_KERNELS.forward_launch(hidden, sampled_stages, True, True)
           for hidden in (64, 128)},
        **{name: NETWORK_KERNELS.categorical_launch(name) for name in ("categorical_terms",
                                                                       "categorical_terms_backward")},
        **{f"a whole trunk's gradients, {name}": NETWORK_KERNELS.trunk_backward_launch(outputs, with_value, True)
           for name, outputs, with_value in (("actor", 42, False), ("critic", 1, False), ("shared", 2, True))},
    }


def built_within_shared_memory(launches: dict[str, dict], capability: int) -> None:
    for name, launch in launches.items():
        kernel = NETWORK_KERNELS.compiled(**launch, capability=capability)
        assert kernel.asm["cubin"] and kernel.metadata.shared <= MOST_SHARED_BYTES_A_BLOCK[capability], name


@pytest.mark.slow
@pytest.mark.parametrize("capability", [86, 100])
def test_every_gpu_that_computes_bfloat16_builds_the_kernels_within_its_shared_memory(capability):
    built_within_shared_memory(train_ref_launches(), capability)


@pytest.mark.slow
@pytest.mark.parametrize("capability", [80, 100])
def test_gpus_of_more_shared_memory_build_the_gradients_kernels_of_wider_layers(capability):
    """At width 128 the gradients' kernels run a layer a launch, and the first layer's program holds the trunk's
    and the head's weights, both ways, in shared memory: 112 KB on an A100, more than an RTX 30x0's block has
    (docs/training.md)."""
    built_within_shared_memory({f"layer {target}": NETWORK_KERNELS.layer_backward_launch(128, target, 42, False)
                                for target in (0, 1, 2)}, capability)


@pytest.mark.parametrize("name", ["categorical_terms", "categorical_terms_backward"])
def test_the_loss_kernels_that_the_eager_path_runs_too_build_for_older_gpus(name):
    """The loss's kernels of discrete actions run on every GPU, eagerly too: on a T4's sm_75 they build for
    bfloat16 logits in rows padded to 16 bytes (16 bytes a tile) and for float32 logits in rows as they are (an
    entry a tile), as the eager path's fp32 networks write them there (precision=auto)."""
    padded = NETWORK_KERNELS.categorical_launch(name)
    as_they_are = dict(padded, constants=dict(padded["constants"], ALIGN=1, ROW_ENTRIES=42), divisible=frozenset(),
                       pointers=dict(padded["pointers"], logits_ptr="*fp32", gradient_ptr="*fp32"))
    for launch in (padded, as_they_are):
        assert NETWORK_KERNELS.compiled(**launch, capability=75).asm["cubin"]


def test_the_gpus_before_those_that_compute_bfloat16_lack_an_instruction_of_the_networks_kernels(capsys):
    """The oldest target ptxas names for the forward kernel's instructions is the trainer's bound."""
    from triton.runtime.errors import PTXASError

    major, minor = BFLOAT16_CAPABILITY
    with pytest.raises(PTXASError) as error:
        NETWORK_KERNELS.compiled(**NETWORK_KERNELS.forward_launch(64, fused_forward.STAGES, True), capability=75)
    capsys.readouterr()  # Triton prints the kernel that ptxas refused
    needed = {int(target) for target in re.findall(r"requires \.target sm_(\d+)", str(error.value))}
    assert needed == {10 * major + minor}, str(error.value)[:2000]
