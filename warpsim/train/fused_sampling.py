"""The rollout's policy step as one kernel (``actor_critic_sample``): the networks' kernel
(``fused_forward``) with a categorical policy sampled in its registers, in place of its outputs written.

After the actor's trunk, the kernel computes each component's logits as the policy head does, their
log-softmax and the action that the run's own draw picks by inverting their cumulative distribution, as
``categorical_terms.sample`` does in torch, and writes the actions, their log-probability and the value: the
logits are never written or read back. On a CPU the op is ``fused_forward.actor_critic`` and those torch
formulas, run by run.
"""

from __future__ import annotations

import torch

from warpsim.train import categorical_terms, fused_forward

STAGES = 1
"""Software-pipelining stages of the sampled kernel's first layer (``fused_forward.STAGES`` for the kernel without
sampling): with two, the kernel spills 16 bytes at width 128 within its 168 registers (ptxas, sm_90); with one it
does not, and on an H200 at train-ref 1, 2 and 3 stages of the forward kernel ran alike."""


def max_registers(hidden: int) -> int:
    """The registers ``launch_sample`` holds a thread to at hidden layers of ``hidden``: as many as leave the kernel
    as many programs an SM as it has without sampling (ptxas, sm_90, at train-ref's shapes, no spills either way).
    Five at widths up to 64: 96 (left to its choice the sampled kernel takes 105, four programs); three above: 168
    (left to its choice, 159)."""
    return 96 if hidden <= 64 else 168


@torch.library.custom_op("warpsim::actor_critic_sample", mutates_args=(), tags=(torch.Tag.flexible_layout,))
def actor_critic_sample(observations: torch.Tensor, actor_weight: torch.Tensor, actor_bias: torch.Tensor,
                        actor_hidden_weights: torch.Tensor, actor_hidden_biases: torch.Tensor,
                        critic_weight: torch.Tensor, critic_bias: torch.Tensor, critic_hidden_weights: torch.Tensor,
                        critic_hidden_biases: torch.Tensor, policy_weight: torch.Tensor, policy_bias: torch.Tensor,
                        value_weight: torch.Tensor, value_bias: torch.Tensor, shared_trunk: bool,
                        uniforms: list[torch.Tensor], levels: list[int]) -> tuple[torch.Tensor, torch.Tensor,
                                                                                  torch.Tensor]:
    """``fused_forward.actor_critic`` with a categorical policy of components of ``levels`` logits, sampled as
    ``categorical_terms.sample`` samples it on each run's draws: ``uniforms`` float32[B], run by run
    and component by component (R x A of them). Returns (actions int32[R, B, A], their log-probability
    float32[R, B], values float32[R, B])."""
    policy, values = fused_forward.actor_critic(
        observations, actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight, critic_bias,
        critic_hidden_weights, critic_hidden_biases, policy_weight, policy_bias, value_weight, value_bias,
        shared_trunk)
    return (*_sampled_by_run(policy[..., :sum(levels)], uniforms, levels), values)


def _sampled_by_run(policy: torch.Tensor, uniforms: list[torch.Tensor],
                    levels: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """``categorical_terms.sample`` run by run on the policy's outputs [R, B, sum(levels)]: (actions, log_prob)."""
    components = len(levels)
    sampled = [categorical_terms.sample(policy[run], uniforms[run * components:(run + 1) * components], levels)
               for run in range(policy.shape[0])]
    actions, log_prob = (torch.stack(part) for part in zip(*sampled))
    return actions, log_prob


@actor_critic_sample.register_fake
def _(observations, *weights_shared_uniforms_levels):
    runs, rows, _ = observations.shape
    levels = weights_shared_uniforms_levels[-1]
    return (observations.new_empty((runs, rows, len(levels)), dtype=torch.int32),
            observations.new_empty((runs, rows), dtype=torch.float32),
            observations.new_empty((runs, rows), dtype=torch.float32))


def draws_layout(uniforms: list[torch.Tensor], runs: int) -> tuple[int, int] | None:
    """(component stride, run stride) in entries where the draws, run by run and component by component, lie
    evenly in one buffer (as ``RunPolicies.noise`` draws them: a run's components one after another, the runs
    ``joint_draw_size`` apart); None otherwise."""
    first = uniforms[0]
    components = len(uniforms) // runs
    component_stride = first.numel()
    run_stride = (uniforms[components].data_ptr() - first.data_ptr()) // first.element_size() if runs > 1 else 0
    storage = first.untyped_storage().data_ptr()
    even = all(draws.is_contiguous() and draws.untyped_storage().data_ptr() == storage and draws.data_ptr()
               == first.data_ptr() + first.element_size() * ((index // components) * run_stride
                                                             + (index % components) * component_stride)
               for index, draws in enumerate(uniforms))
    return (component_stride, run_stride) if even else None


def launch_sample(observations: torch.Tensor, *weights_and_shared, uniforms: list[torch.Tensor],
                  levels: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``actor_critic_sample`` by the Triton kernel (``fused_forward.run_kernel``), on the observations' device;
    on a CPU (``TRITON_INTERPRET=1``) through Triton's interpreter. The draws are read where they lie when they
    lie evenly in one buffer (``draws_layout``), otherwise stacked first."""
    *weights, shared_trunk = weights_and_shared
    runs, rows, _ = observations.shape
    layout = draws_layout(uniforms, runs)
    draws = uniforms[0] if layout else torch.stack(uniforms)
    component_stride, run_stride = layout or (uniforms[0].numel(), len(levels) * uniforms[0].numel())
    actions = observations.new_empty((runs, rows, len(levels)), dtype=torch.int32)
    log_prob = observations.new_empty((runs, rows), dtype=torch.float32)
    values = torch.empty_like(log_prob)
    if rows:
        fused_forward.run_kernel(observations, list(weights), shared_trunk, log_prob, values,
                                 fused_forward.Sampled(draws, component_stride, run_stride, levels, actions),
                                 fused_forward.BLOCK_ROWS, 4, STAGES, max_registers(weights[0].shape[1]))
    return actions, log_prob, values


@actor_critic_sample.register_kernel("cuda")
def _(observations, *weights_shared_uniforms_levels):
    *weights_and_shared, uniforms, levels = weights_shared_uniforms_levels
    if categorical_terms.kernels_take(levels):
        return launch_sample(observations, *weights_and_shared, uniforms=uniforms, levels=levels)
    policy, values = fused_forward.launch(observations, *weights_and_shared)
    return (*_sampled_by_run(policy[..., :sum(levels)], uniforms, levels), values)
