"""The gradients of the networks' kernel (``fused_forward.actor_critic``) as kernels too:
``actor_critic_backward``, the backward pass of ``DifferentiableActorCritic``, so that the fused update can run
the same networks (``TrainConfig.gradient_kernels``).

A kernel sums the gradients of a whole trunk, or of one of its layers, over the minibatch, computing again from
the observations what it needs of the activations (actor_critic_backward_kernel.py). A minibatch step then reads
the observations again, instead of writing and reading every layer's activations and their gradients. On the
CPU the gradients are autograd's formulas under bf16 autocast, written out.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import torch

from warpsim.train import categorical_terms, triton_launch
from warpsim.train.fused_forward import (
    BLOCK_INPUTS,
    activations,
    actor_critic,
    kernel_operands,
    policy_dtype,
    power_of_two,
)


@torch.library.custom_op("warpsim::actor_critic_backward", mutates_args=(), tags=(torch.Tag.flexible_layout,))
def actor_critic_backward(policy_gradient: torch.Tensor, value_gradient: torch.Tensor, observations: torch.Tensor,
                          actor_weight: torch.Tensor, actor_bias: torch.Tensor, actor_hidden_weights: torch.Tensor,
                          actor_hidden_biases: torch.Tensor, critic_weight: torch.Tensor, critic_bias: torch.Tensor,
                          critic_hidden_weights: torch.Tensor, critic_hidden_biases: torch.Tensor,
                          policy_weight: torch.Tensor, policy_bias: torch.Tensor, value_weight: torch.Tensor,
                          value_bias: torch.Tensor, shared_trunk: bool) -> torch.Tensor:
    """The gradients of ``actor_critic``'s twelve weights and biases, given its outputs' gradients: policy's
    of its dtype [R, B, P], values' float32[R, B]. The other arguments are ``actor_critic``'s. Returns them
    side by side in float32[R, G], each run's flattened in the order of the operands (the critic trunk's
    zero with ``shared_trunk``); ``split_gradients`` gives each its operand's shape and dtype. One tensor, so
    that the launcher writes its sums once (an op's outputs share no memory, and twelve would be twelve
    copies) and the update reads them where they are.

    On the CPU, autograd's formulas under bf16 autocast, written out (an op's implementation runs
    below autograd): the backward kernel's reference."""
    actor = activations(observations, actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases)
    critic = actor if shared_trunk else activations(observations, critic_weight, critic_bias, critic_hidden_weights,
                                                     critic_hidden_biases)
    actor_features, policy_weight_gradient, policy_bias_gradient = _linear_backward(actor[-1], policy_weight,
                                                                                    policy_gradient)
    critic_features, value_weight_gradient, value_bias_gradient = _linear_backward(critic[-1], value_weight,
                                                                                   value_gradient.unsqueeze(-1))
    if shared_trunk:
        actor_gradients = _trunk_backward(actor, actor_hidden_weights, actor_features + critic_features)
        critic_gradients = [torch.zeros_like(weight) for weight in (critic_weight, critic_bias, critic_hidden_weights,
                                                                     critic_hidden_biases)]
    else:
        actor_gradients = _trunk_backward(actor, actor_hidden_weights, actor_features)
        critic_gradients = _trunk_backward(critic, critic_hidden_weights, critic_features)
    runs = observations.shape[0]
    return torch.cat([gradient.reshape(runs, gradient.numel() // runs).float() for gradient in (
        *actor_gradients, *critic_gradients, policy_weight_gradient, policy_bias_gradient, value_weight_gradient,
        value_bias_gradient)], 1)


def gradient_offsets(weights: list[torch.Tensor], runs: int) -> list[int]:
    """Where each of ``weights`` starts in a run's row of gradients side by side, and where the last ends (a
    shared trunk's empty critic takes none)."""
    return [0, *itertools.accumulate(weight.numel() // runs for weight in weights)]


def split_gradients(gradients: torch.Tensor, weights: list[torch.Tensor]) -> list[torch.Tensor]:
    """``actor_critic_backward``'s gradients float32[R, G], one per operand of ``weights`` (its twelve weights
    and biases), in that operand's shape and dtype: a view for a float32 operand, a rounded copy for a bfloat16
    one."""
    offsets = gradient_offsets(weights, gradients.shape[0])
    return [gradients[:, start:end].view(weight.shape).to(weight.dtype)
            for weight, start, end in zip(weights, offsets, offsets[1:])]


def _linear_backward(inputs: torch.Tensor, weight: torch.Tensor,
                     gradient: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``_linear``'s gradients (its inputs', in their dtype; its weight's; its bias's) from its output's."""
    if weight.shape[1] == 1:  # float32, a product and a sum
        return ((gradient * weight).to(inputs.dtype), (gradient * inputs).sum(1, keepdim=True),
                gradient.sum(1))
    return torch.bmm(gradient, weight), torch.bmm(gradient.transpose(1, 2), inputs), gradient.sum(1)


def _trunk_backward(layers: list[torch.Tensor], hidden_weights: torch.Tensor,
                    gradient: torch.Tensor) -> list[torch.Tensor]:
    """A trunk's gradients (first weight, first bias, stacked further weights and biases) from its
    ``activations`` and its features' gradient."""
    weights: list[torch.Tensor] = []
    biases: list[torch.Tensor] = []
    for layer in range(len(layers) - 1, 0, -1):
        summed = torch.ops.aten.tanh_backward(gradient, layers[layer])
        weights.insert(0, torch.bmm(summed.transpose(1, 2), layers[layer - 1]))
        biases.insert(0, summed.sum(1))
        if layer > 1:
            gradient = torch.bmm(summed, hidden_weights[:, layer - 2])
    further = (torch.stack(weights[1:], 1) if len(weights) > 1 else hidden_weights.new_zeros(hidden_weights.shape),
               torch.stack(biases[1:], 1) if len(biases) > 1 else
               hidden_weights.new_zeros(hidden_weights.shape[:-1]))
    return [weights[0], biases[0], *further]


@actor_critic_backward.register_fake
def _(policy_gradient, value_gradient, observations, *weights_and_shared):
    runs = observations.shape[0]
    entries = gradient_offsets(list(weights_and_shared[:-1]), runs)[-1]
    return observations.new_empty((runs, entries), dtype=torch.float32)


class DifferentiableActorCritic(torch.autograd.Function):
    """``actor_critic`` with its gradients by ``actor_critic_backward``: ``apply`` takes ``actor_critic``'s
    arguments. An autograd Function, which ``torch.func.grad`` (the fused update's) differentiates."""

    @staticmethod
    def forward(observations, actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight,
                critic_bias, critic_hidden_weights, critic_hidden_biases, policy_weight, policy_bias, value_weight,
                value_bias, shared_trunk):
        policy, values = actor_critic(observations, actor_weight, actor_bias, actor_hidden_weights,
                                      actor_hidden_biases, critic_weight, critic_bias, critic_hidden_weights,
                                      critic_hidden_biases, policy_weight, policy_bias, value_weight, value_bias,
                                      shared_trunk)
        return policy[..., :policy_weight.shape[1]], values  # its padded rows, as the loss's kernels read them

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        ctx.save_for_backward(*inputs[:-1])
        ctx.shared_trunk = inputs[-1]

    @staticmethod
    def backward(ctx, policy_gradient: torch.Tensor, value_gradient: torch.Tensor) -> tuple:
        observations, *weights = ctx.saved_tensors
        with torch.no_grad():  # once differentiable: torch.func.grad records the backward pass otherwise
            gradients = actor_critic_backward(policy_gradient, value_gradient, observations, *weights,
                                              ctx.shared_trunk)
        return None, *split_gradients(gradients, weights), None


PARTIAL_SUMS = 512
"""Programs of one launch of the gradients' kernels, over all runs: each writes its own sums of the gradients
it takes, which the launcher then adds up (tens of MB at train-ref, against 781 MB of a minibatch's
observations)."""
FIRST_LAYER_INPUTS = 128
"""Inputs of the first layer whose weight's gradient one program sums (train-ref's 80 in one,
``first_layer_columns``): a larger observation takes several programs, each computing the block's gradients
again."""
BACKWARD_BLOCK_ROWS = 32
"""Rows of a block of the gradients' kernels: at 64 a whole trunk's program spills at width 64, and so does a
first layer's (ptxas, sm_90); at 32 neither does, nor a layer's at width 128."""
WHOLE_TRUNK_HIDDEN = 64
"""The widest trunk whose gradients one program sums all at once (``fused_trunk_backward``, 8 warps: 184
registers at train-ref's shapes, no spills; at 128 it spills), if it has at most two layers."""


WHOLE_TRUNK_BLOCK_INPUTS = 64
"""Observation entries per product of the trunk's first layer in a whole trunk's program (``fused_trunk_backward``;
a layer's keeps ``BLOCK_INPUTS``, 16): at train-ref's 80 inputs one product and one of 16 (``input_chunks``),
where a block of rows made five. Compiled for sm_90 at train-ref's shapes
(benchmarks/network_kernel_resources.py's ``row_loop_instructions``), with two whole products a block of rows
issued 498 machine instructions a warp in the actor's program, against 532 at 16 inputs and 509 at 128, in 184
registers against 210 and 196."""


MOST_UNROLLED_CHUNKS = 8
"""The most products the gradients' kernels unroll the first layer into (``input_chunks``): unrolled, a product's
part of the weight is read once, before a program's loop over blocks of rows (at train-ref a block of the actor's
whole-trunk program issued 498 machine instructions a warp against 553 in a loop); each part takes its place in
shared memory (8 KB at 64 inputs by 64 units), so that larger observations keep the loop."""


def _split(entries: int, block: int) -> tuple[int, int]:
    """``entries`` as whole blocks of ``block`` and the entries of a narrower last one, the least power of two
    (at least 16) that holds what the whole blocks leave (0: none left)."""
    blocks, left = divmod(entries, block)
    tail = power_of_two(left) if left else 0
    return (blocks + 1, 0) if tail >= block else (blocks, tail)


def input_chunks(inputs: int, block_inputs: int) -> tuple[int, int]:
    """The products the gradients' kernels unroll the first layer of ``inputs`` into: how many of
    ``block_inputs`` entries, and the entries of a narrower last one (0: none; train-ref's 80 inputs: one of 64
    and one of 16, where two of 64 would multiply 48 zeros a row); (0, 0), a loop, where that makes more than
    ``MOST_UNROLLED_CHUNKS`` products."""
    chunks, tail = _split(inputs, block_inputs)
    return (chunks, tail) if chunks + (tail > 0) <= MOST_UNROLLED_CHUNKS else (0, 0)


def first_layer_columns(inputs: int) -> tuple[int, int]:
    """The inputs of the first layer whose weight's gradient a program of the gradients' kernels sums: a block of
    a power of two, at most ``FIRST_LAYER_INPUTS``, one program per block; and, where the observation has no more
    entries than that, a narrower block after it in the same program (0: none). At train-ref's 80 inputs, 64 and
    16, with the first layer's products as ``input_chunks`` makes them: against whole blocks of 64 and one block of
    128 here, the critic's whole-trunk program holds 128 registers instead of 166, so two programs an SM instead of
    one, and a block of rows issues 488 machine instructions a warp instead of 508 (the actor's: 480 instead of
    498, in 178 registers instead of 184; ptxas, sm_90, benchmarks/results/kernel_resources-networks.md)."""
    if inputs > FIRST_LAYER_INPUTS:
        return FIRST_LAYER_INPUTS, 0
    block = max(16, 1 << (inputs.bit_length() - 1))
    blocks, tail = _split(inputs, block)
    return block * blocks, tail


def chunk_constants(inputs: int, block_inputs: int) -> dict[str, int]:
    """``input_chunks`` as the gradients' kernels take it (INPUT_CHUNKS, INPUT_TAIL)."""
    chunks, tail = input_chunks(inputs, block_inputs)
    return dict(INPUT_CHUNKS=chunks, INPUT_TAIL=tail)


def whole_trunks_fit(hidden: int, layers: int) -> bool:
    """Whether ``launch_backward`` sums a trunk's gradients in one launch by default: up to two layers of
    ``WHOLE_TRUNK_HIDDEN``."""
    return layers <= 2 and hidden <= WHOLE_TRUNK_HIDDEN


MEASURED_GPUS = 9
"""The major compute capability of the GPUs on which ``gradient_kernels='auto'`` runs the gradients' kernels:
Hopper's (H100, H200). On an H200 at 062ec78 every config's update was faster with them, whole trunks a launch:
train-ref 202 ms against 214, headline 444 against 472, grid 9.7 against 14.5 (benchmarks/results/train-speed/).
For sm_80 and sm_86 ptxas spills the whole trunk's program, and no other GPU has timed them."""


def pay_off(device: torch.device, hidden: int, layers: int) -> bool:
    """Whether ``gradient_kernels='auto'`` runs the gradients' kernels for networks of ``layers`` layers ``hidden``
    wide on ``device``: on a GPU of ``MEASURED_GPUS``, a whole trunk a launch (``whole_trunks_fit``)."""
    return (device.type == "cuda" and torch.cuda.get_device_capability(device)[0] == MEASURED_GPUS
            and whole_trunks_fit(hidden, layers))


def backward_warps(hidden: int, whole_trunks: bool) -> int:
    """Warps of a program of the gradients' kernels: a whole trunk's 8; a layer's 4 up to width 64 and 8
    above (fewer spill)."""
    return 8 if whole_trunks or hidden > 64 else 4


class LossOperands(NamedTuple):
    """What the whole-trunk gradients' kernel computes PPO's loss from, besides the networks (``fused_loss``): each
    run's minibatch and coefficients."""

    picks: torch.Tensor
    """int64[R, B], a run's row of unit stride: the minibatch's rows of the observations (the rollout's, which the
    kernel reads where they lie)"""
    actions: torch.Tensor
    """int32[R, B, A], of A categorical components of ``levels`` logits each"""
    old_log_probs: torch.Tensor
    """float32[R, B], of the actions when sampled"""
    advantages: torch.Tensor
    """float32[R, B], normalised as the loss normalises them"""
    old_values: torch.Tensor
    """float32[R, B], at collection"""
    returns: torch.Tensor
    """float32[R, B]"""
    coefficients: torch.Tensor
    """float32[R, 4]: clip, value_clip, value_coef, entropy_coef"""
    levels: int
    value_clip: bool
    """Whether the value's error is the larger of its own and the clipped value's."""


def loss_columns(components: int, levels: int) -> tuple[int, int]:
    """How the gradients' kernel lays out a policy head of ``components`` x ``levels`` logits when it computes their
    loss (``ppo_loss_kernel.head_rows``): powers of two of components and of columns a component, at least 16
    columns in all (Triton's smallest product), so that each component's log-softmax is one reduction of a tile."""
    block_components = power_of_two(components, least=1)
    return block_components, max(power_of_two(levels, least=1), 16 // block_components)


class TrunkLaunch(NamedTuple):
    """A program of a whole trunk's gradients' kernel: its rows, its warps, and the registers a thread is held to
    (None: ptxas's choice)."""

    block_rows: int
    warps: int
    max_registers: int | None


class BackwardLaunch:
    """The launches of the gradients' kernels on one minibatch: ``whole_trunk`` or ``layer`` for each part of the
    networks, then ``sums``. ``actor_critic``'s observations and its twelve weights and biases (``weights``); a
    program's shape and their number per run as ``launch_backward`` takes them; ``rows``: the minibatch's, where
    they are picked from the observations' (the loss's launches, ``LossOperands.picks``)."""

    def __init__(self, observations: torch.Tensor, weights: list[torch.Tensor], block_rows: int, warps: int | None,
                 programs: int | None, whole_trunks: bool | None, stages: int, max_registers: int | None,
                 rows: int | None = None):
        import triton.language as tl

        runs, self.observation_rows, self.inputs = observations.shape
        self.rows = self.observation_rows if rows is None else rows
        self.hidden, self.layers = weights[0].shape[1], weights[2].shape[1] + 1
        self.observations, self.bits = kernel_operands(observations.contiguous(), weights, weights[8].shape[1])
        self.weights, self.block_rows, self.stages, self.max_registers = weights, block_rows, stages, max_registers
        self.programs = programs or min(-(-self.rows // block_rows), max(1, PARTIAL_SUMS // runs))
        self.whole_trunks = whole_trunks_fit(self.hidden, self.layers) if whole_trunks is None else whole_trunks
        self.warps = warps or backward_warps(self.hidden, self.whole_trunks)
        # Every program's partial sums of all the gradients side by side, so that one sum adds them all up.
        self.offsets = gradient_offsets(weights, runs)
        self.partial_sums = observations.new_empty((runs, self.programs, self.offsets[-1]), dtype=torch.float32)
        self.first_columns, self.tail_columns = first_layer_columns(self.inputs)
        self.dot = tl.float32 if observations.device.type == "cpu" else tl.bfloat16

    def _sums_at(self, index: int) -> torch.Tensor:
        """Where the partial sums of ``weights[index]``'s gradient start."""
        return self.partial_sums[:, :, self.offsets[index]:]

    def _head_gradient(self, head_gradients: list[torch.Tensor], head: int) -> tuple[torch.Tensor, int]:
        """The outputs' gradient of the head whose weight is ``weights[head]`` as the kernels take it (bfloat16 as
        its bits), and the entries of its rows (GRADIENT_ENTRIES)."""
        gradient = head_gradients[head == 10]
        if self.weights[head].shape[1] == 1:
            return gradient, 1
        return gradient.view(torch.int16), gradient.stride(1)

    def whole_trunk(self, head_gradients: list[torch.Tensor] | None, trunk: int, head: int, with_value: bool,
                    loss: LossOperands | None = None, statistics: torch.Tensor | None = None,
                    shape: TrunkLaunch | None = None, picks: torch.Tensor | None = None) -> None:
        """The partial sums of every gradient of the trunk whose weights start at ``weights[trunk]`` and of
        its head, whose weight is ``weights[head]`` (and of the value's, ``with_value``), from the heads' outputs'
        gradients (the policy's and the value's), on the observations' rows ``picks`` (``LossOperands.picks``) where
        given; with ``loss`` (and None for those), from PPO's loss instead, computed in the kernel on the rows
        ``loss.picks``, whose part of the statistics each program writes into ``statistics`` float32[R, programs,
        STATISTICS]. ``shape``: this launch's program, where not the others' (its rows at most theirs)."""
        from warpsim.train.actor_critic_backward_kernel import fused_trunk_backward

        outputs, bits, inputs = self.weights[head].shape[1], self.bits, self.inputs
        shape = shape or TrunkLaunch(self.block_rows, self.warps, self.max_registers)
        block_outputs, block_levels = power_of_two(outputs), 1
        if loss is None:
            assert head_gradients is not None
            (gradient, entries), value_gradient = self._head_gradient(head_gradients, head), head_gradients[1]
            # none read but the picks, where given
            loss_pointers = [gradient] * 8 + ([gradient, 0] if picks is None else [picks, picks.stride(0)])
        else:
            assert statistics is not None
            gradient, entries, value_gradient = statistics, 1, statistics  # not read: the kernel computes them
            loss_pointers = [bits[head + 1], loss.actions, loss.old_log_probs, loss.advantages, loss.old_values,
                             loss.returns, loss.coefficients, statistics, loss.picks, loss.picks.stride(0)]
            if outputs > 1:
                block_components, block_levels = loss_columns(loss.actions.shape[-1], loss.levels)
                block_outputs = block_components * block_levels
        whole_trunk_inputs = min(WHOLE_TRUNK_BLOCK_INPUTS, power_of_two(inputs))
        sums = [self._sums_at(index) for index in (trunk, trunk + 1, trunk + 2, trunk + 3, head, head + 1, 10, 11)]
        fused_trunk_backward[(self.programs, self.observations.shape[0],
                              -(-inputs // (self.first_columns + self.tail_columns)))](
            self.observations.view(torch.int16), self.observation_rows * inputs, *bits[trunk:trunk + 4], bits[head],
            gradient, bits[10], value_gradient, *sums, *loss_pointers, self.observation_rows, self.rows, inputs,
            self.programs, self.offsets[-1], HIDDEN=self.hidden, LAYERS=self.layers, OUTPUTS=outputs,
            GRADIENT_ENTRIES=entries, WITH_VALUE=with_value, BLOCK_ROWS=shape.block_rows,
            BLOCK_INPUTS=whole_trunk_inputs, BLOCK_HIDDEN=power_of_two(self.hidden), BLOCK_OUTPUTS=block_outputs,
            BLOCK_IN=self.first_columns, TAIL_IN=self.tail_columns, DOT=self.dot, LOSS=loss is not None,
            COMPONENTS=0 if loss is None else loss.actions.shape[-1], LEVELS=0 if loss is None else loss.levels,
            BLOCK_LEVELS=block_levels, VALUE_CLIP=loss is not None and loss.value_clip,
            PICKED=loss is not None or picks is not None,
            **chunk_constants(inputs, whole_trunk_inputs), num_warps=shape.warps, num_stages=self.stages,
            maxnreg=shape.max_registers, **triton_launch.OPTIONS)

    def layer(self, head_gradients: list[torch.Tensor], trunk: int, target: int, head: int, with_value: bool) -> None:
        """The partial sums of the gradients of layer ``target``'s weight and bias of the trunk whose
        weights start at ``weights[trunk]`` (0: the actor's, 4: the critic's), or for ``target == layers``
        of its head's, whose weight is ``weights[head]`` (8: the policy's, 10: the value's)."""
        from warpsim.train.actor_critic_backward_kernel import fused_actor_critic_backward

        weights, layers, hidden, inputs, offsets = self.weights, self.layers, self.hidden, self.inputs, self.offsets
        out, into = weights[head].shape[1:] if target == layers else (hidden, inputs if target == 0 else hidden)
        summed = head if target == layers else trunk if target == 0 else trunk + 2
        further = target - 1 if 0 < target < layers else 0  # the stacked layer's place
        weight_start, bias_start = offsets[summed] + further * out * into, offsets[summed + 1] + further * out
        outputs = weights[head].shape[1]
        gradient, entries = self._head_gradient(head_gradients, head)
        columns, tail = (self.first_columns, self.tail_columns) if target == 0 else (power_of_two(into), 0)
        layer_inputs = min(BLOCK_INPUTS, power_of_two(inputs))
        fused_actor_critic_backward[(self.programs, self.observations.shape[0], -(-into // (columns + tail)))](
            self.observations.view(torch.int16), self.rows * inputs, *self.bits[trunk:trunk + 4], self.bits[head],
            gradient, self.bits[10], head_gradients[1], self.partial_sums[:, :, weight_start:],
            self.partial_sums[:, :, bias_start:], self.rows, inputs, self.programs, offsets[-1], out, into,
            HIDDEN=hidden, LAYERS=layers, OUTPUTS=outputs, GRADIENT_ENTRIES=entries, TARGET=target,
            WITH_VALUE=with_value, BLOCK_ROWS=self.block_rows, BLOCK_INPUTS=layer_inputs,
            BLOCK_HIDDEN=power_of_two(hidden), BLOCK_OUTPUTS=power_of_two(outputs), BLOCK_OUT=power_of_two(out),
            BLOCK_IN=columns, TAIL_IN=tail, DOT=self.dot, **chunk_constants(inputs, layer_inputs),
            num_warps=self.warps, num_stages=self.stages, maxnreg=self.max_registers, **triton_launch.OPTIONS)

    def sums(self, shared_trunk: bool) -> torch.Tensor:
        """The programs' partial sums added up: ``actor_critic_backward``'s gradients."""
        sums = self.partial_sums.sum(1)
        if shared_trunk and self.offsets[8] > self.offsets[4]:  # a critic trunk given but unused: no program summed it
            sums[:, self.offsets[4]:self.offsets[8]] = 0
        return sums


def launch_backward(policy_gradient: torch.Tensor, value_gradient: torch.Tensor, observations: torch.Tensor,
                    actor_weight: torch.Tensor, actor_bias: torch.Tensor, actor_hidden_weights: torch.Tensor,
                    actor_hidden_biases: torch.Tensor, critic_weight: torch.Tensor, critic_bias: torch.Tensor,
                    critic_hidden_weights: torch.Tensor, critic_hidden_biases: torch.Tensor,
                    policy_weight: torch.Tensor, policy_bias: torch.Tensor, value_weight: torch.Tensor,
                    value_bias: torch.Tensor, shared_trunk: bool, block_rows: int = BACKWARD_BLOCK_ROWS,
                    warps: int | None = None, programs: int | None = None,
                    whole_trunks: bool | None = None, stages: int = 1,
                    max_registers: int | None = None) -> torch.Tensor:
    """``actor_critic_backward`` by the Triton kernels (``actor_critic_backward_kernel``) on the observations'
    device (a CPU through Triton's interpreter): with ``whole_trunks`` one launch per trunk
    (``fused_trunk_backward``), otherwise one per layer and head of each (``fused_actor_critic_backward``);
    by default whole trunks where they fit (``WHOLE_TRUNK_HIDDEN``, two layers at most). ``block_rows`` and
    ``warps`` (default: ``backward_warps``) shape a program, ``stages`` pipelines its loops (Triton's
    ``num_stages``), ``max_registers`` holds a thread to that many (Triton's ``maxnreg``; default: ptxas's choice);
    ``programs``: per run, how many partial sums each launch makes (default ``PARTIAL_SUMS``
    over the runs, at most one per block of rows; a program left without rows sums to zero)."""
    weights = [actor_weight, actor_bias, actor_hidden_weights, actor_hidden_biases, critic_weight, critic_bias,
               critic_hidden_weights, critic_hidden_biases, policy_weight, policy_bias, value_weight, value_bias]
    launch = BackwardLaunch(observations, weights, block_rows, warps, programs, whole_trunks, stages, max_registers)
    if policy_gradient.dtype != policy_dtype(policy_weight):
        raise TypeError(f"actor_critic_backward takes the policy's gradient in {policy_dtype(policy_weight)}")
    # the loss's gradient of discrete actions read in the rows it writes (categorical_terms.gradient_width)
    head_gradients = [policy_gradient if categorical_terms.padded_rows(policy_gradient)
                      else policy_gradient.contiguous(), value_gradient.contiguous()]
    if launch.whole_trunks:
        launch.whole_trunk(head_gradients, 0, 8, shared_trunk)
        if not shared_trunk:
            launch.whole_trunk(head_gradients, 4, 10, False)
    else:
        for target in range(launch.layers + 1):
            launch.layer(head_gradients, 0, target, 8, shared_trunk)
        for target in [launch.layers] if shared_trunk else range(launch.layers + 1):
            launch.layer(head_gradients, 0 if shared_trunk else 4, target, 10, False)
    return launch.sums(shared_trunk)


@actor_critic_backward.register_kernel("cuda")
def _(*args):
    return launch_backward(*args)
