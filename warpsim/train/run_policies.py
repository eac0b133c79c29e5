"""The trainer's form of the networks (``RunPolicies``): every role's networks of R training runs stacked
along a leading run dimension (``StackedActorCritic``), each layer one batched matmul over the runs
(``StackedLinear``), and on the fused path warpsim's kernels. Run r's slice of its state dict is a
``policy.RolePolicies`` state dict, so every run saves and loads the same checkpoints as a run trained alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager

import torch
from torch import nn

from warpsim.train import fused_backward, fused_forward, fused_sampling
from warpsim.train.action_heads import CategoricalHeads, joint_draw_size, roles_noise
from warpsim.train.policy import Acted, ActorCritic, ActorCriticBase, HeadsByRole, RolePolicies
from warpsim.train.value_norm import ValueNormalizer


class StackedLinear(nn.Module):
    """R independent linear layers: float[R, B, in] -> float[R, B, out], one batched matmul.

    ``weight`` float32[R, out, in] and ``bias`` float32[R, out]: run r's slices are an
    ``nn.Linear``'s own parameters."""

    def __init__(self, layers: list[nn.Linear]):
        super().__init__()
        self.weight = nn.Parameter(torch.stack([layer.weight.detach() for layer in layers]))
        self.bias = nn.Parameter(torch.stack([layer.bias.detach() for layer in layers]))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if self.weight.shape[1] == 1:
            # A one-column batched matmul takes a path whose rounding depends on the number of runs;
            # a product and a sum over the last dimension round alike for any number.
            return (inputs * self.weight).sum(-1, keepdim=True) + self.bias.unsqueeze(1)
        return torch.baddbmm(self.bias.unsqueeze(1), inputs, self.weight.transpose(1, 2))

    def aligned(self, inputs: torch.Tensor) -> torch.Tensor:
        """``forward``, by a product whose outputs' rows are 16-byte aligned (``kernel_counts.aligned_matrix``):
        the weight's rows and the bias padded with zeros to the kernels' alignment (``fused_forward.
        aligned_rows``), the padding's outputs sliced off (a view)."""
        outputs = self.weight.shape[1]
        padding = fused_forward.aligned_size(outputs) - outputs
        weight = torch.nn.functional.pad(self.weight, (0, 0, 0, padding))
        wide = torch.baddbmm(fused_forward.aligned_rows(self.bias).unsqueeze(1), inputs, weight.transpose(1, 2))
        return wide[..., :outputs]


def _stacked(modules: list[nn.Module]) -> nn.Module:
    """The layers of R alike MLPs (Sequential of Linear and Tanh), or heads, stacked over the runs."""
    first = modules[0]
    if isinstance(first, nn.Linear):
        return StackedLinear([module for module in modules if isinstance(module, nn.Linear)])
    if isinstance(first, nn.Sequential):
        return nn.Sequential(*(_stacked([module[i] for module in modules if isinstance(module, nn.Sequential)])
                               for i in range(len(first))))
    return first  # parameterless (Tanh): shared


class StackedActorCritic(ActorCriticBase):
    """R ``ActorCritic`` networks of one role stacked along a leading run dimension, with the
    same submodule names: forward(float[R, B, >= D]) -> (logits float[R, B, L], value float[R, B])."""

    def __init__(self, networks: list[ActorCritic]):
        super().__init__()
        first = networks[0]
        self.trunk = _stacked([network.trunk for network in networks])
        self.value_trunk = (None if first.value_trunk is None
                            else _stacked([network.value_trunk for network in networks if network.value_trunk]))
        self.policy_head = _stacked([network.policy_head for network in networks])
        self.log_std = (None if first.log_std is None else
                        nn.Parameter(torch.stack([network.log_std.detach() for network in networks
                                                  if network.log_std is not None])))
        self.value_head = _stacked([network.value_head for network in networks])
        self.joint_first_layers = False
        """Whether ``forward`` runs the actor's and the critic's first layers as one product, their biases within it,
        it and the policy's head on rows padded with zeros, and adds the further layers' biases after their
        products (``_biases_after``), as the trainer's fused path does (the same sums, in another order, the further
        layers' outputs rounded once more)."""
        self.value_normalizer = None if first.value_normalizer is None else ValueNormalizer(runs=len(networks))
        if self.value_normalizer is not None:
            for name, buffer in self.value_normalizer.named_buffers():
                buffer.copy_(torch.stack([network.get_buffer(f"value_normalizer.{name}") for network in networks]))

    def forward(self, observations: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """observations float[R, B, >= D]: rows stored on the fused path are wider, by zeros (``fused_forward.
        aligned_rows``). The networks read their own width, contiguous, so that their products sum as on
        unpadded inputs, bit for bit; but see ``joint_first_layers``."""
        inputs = observations[..., :self.observation_size]
        if not self.joint_first_layers or self.value_trunk is None:
            return super().forward(inputs.contiguous())
        # Both trunks' first layers as one product: the observations read once, forward and backward. Its biases are
        # the weight's column past the inputs, where the inputs' rows hold 1: their gradient is a column of the
        # weight's, not a sum over the rows of their own. Its rows, the inputs' and the weight's, and the policy
        # head's outputs padded with zeros to the kernels' alignment: 16-byte aligned rows, which cuBLAS reads with
        # its vectorised kernels (``kernel_counts.aligned_matrix``).
        trunk, value_trunk = self.trunk, self.value_trunk
        assert isinstance(trunk, nn.Sequential) and isinstance(value_trunk, nn.Sequential)
        actor_first, critic_first = trunk[0], value_trunk[0]
        assert isinstance(actor_first, StackedLinear) and isinstance(critic_first, StackedLinear)
        biases = torch.cat([actor_first.bias, critic_first.bias], 1).unsqueeze(-1)
        weight = fused_forward.aligned_rows(torch.cat([torch.cat([actor_first.weight, critic_first.weight], 1),
                                                       biases], -1))
        size = self.observation_size
        # 1 added where the padding is, not a column joined on: the rows' gather, padding and 1 one kernel
        one = (torch.arange(weight.shape[-1], device=inputs.device) == size).to(inputs.dtype)
        with_one = torch.nn.functional.pad(inputs, (0, weight.shape[-1] - size)) + one
        both = torch.bmm(with_one, weight.transpose(1, 2))
        actor, critic = torch.tanh(both).split(actor_first.weight.shape[1], dim=-1)
        policy_head = self.policy_head
        assert isinstance(policy_head, StackedLinear)
        policy = self._with_log_std(policy_head.aligned(_biases_after(list(trunk)[2:], actor)))
        return policy, self.value_head(_biases_after(list(value_trunk)[2:], critic)).squeeze(-1)

    @property
    def observation_size(self) -> int:
        """D, the width of the inputs these networks read."""
        return _linears(self.trunk)[0].weight.shape[-1]

    def fusable(self) -> bool:
        """Whether ``fused`` takes these networks: hidden layers at least 2 (a one-column layer is no
        product) and at most ``fused_forward.MAX_HIDDEN`` wide."""
        return 2 <= _linears(self.trunk)[0].weight.shape[1] <= fused_forward.MAX_HIDDEN

    def fused(self, observations: torch.Tensor, weights: tuple | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``forward`` under bf16 autocast as one kernel (``fused_forward.actor_critic``), its gradients as
        kernels too: float[R, B, D] in, rounded to bfloat16 as autocast rounds it; the outputs in autocast's
        dtypes (the policy's in bfloat16, float32 beside a learned log standard deviation). ``weights``: these
        networks' ``fused_weights``, made beforehand (a rollout's steps share them); by default made now."""
        weights = self.fused_weights() if weights is None else weights
        policy, value = fused_backward.DifferentiableActorCritic.apply(self.fused_observations(observations), *weights)
        return self._with_log_std(policy), value

    def fused_sample(self, observations: torch.Tensor, uniforms: list[torch.Tensor], levels: list[int],
                     weights: tuple | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``fused`` with a categorical policy, sampled in the same kernel (``fused_sampling.actor_critic_sample``)
        on each run's draws ``uniforms`` (run by run, component by component): (actions int32[R, B, A], their
        log-probability float32[R, B], values float32[R, B])."""
        weights = self.fused_weights() if weights is None else weights
        return fused_sampling.actor_critic_sample(self.fused_observations(observations), *weights, uniforms, levels)

    def fused_operands(self, observations: torch.Tensor) -> tuple:
        """The arguments of ``fused_forward.actor_critic`` for these networks on float[R, B, D]:
        ``fused_observations``, then ``fused_weights``."""
        return self.fused_observations(observations), *self.fused_weights()

    @staticmethod
    def fused_observations(observations: torch.Tensor) -> torch.Tensor:
        """Observations float[R, B, D] as ``fused_forward.actor_critic`` takes them: in bfloat16, their rows
        aligned (``fused_forward.aligned_rows``)."""
        return fused_forward.aligned_rows(observations.to(torch.bfloat16))

    def fused_weights(self) -> tuple:
        """The arguments of ``fused_forward.actor_critic`` after the observations: the trunks' weights, the first
        layers' rows aligned as the observations', then the heads'. A shared trunk's critic is empty (the
        kernels ignore it, and an autograd Function under torch.compile takes no tensor twice)."""
        policy_head, value_head = self.policy_head, self.value_head
        assert isinstance(policy_head, StackedLinear) and isinstance(value_head, StackedLinear)
        trunks = [self.trunk] if self.value_trunk is None else [self.trunk, self.value_trunk]
        operands = fused_forward.autocast_operands([*(pair for trunk in trunks for pair in _packed(trunk)),
                                                    (policy_head.weight, policy_head.bias),
                                                    (value_head.weight, value_head.bias)])
        actor, heads = operands[:4], operands[-4:]
        critic = [tensor.new_empty(0) for tensor in actor] if self.value_trunk is None else operands[4:8]
        return (*actor, *critic, *heads, self.value_trunk is None)


def _biases_after(layers: list[nn.Module], inputs: torch.Tensor) -> torch.Tensor:
    """``layers`` (a trunk's further stacked layers and their tanh) on ``inputs``, each bias added after its
    layer's product, in the product's dtype, where inductor fuses the sum into the kernel of the tanh that reads
    the product: a batched product with a broadcast bias (``torch.baddbmm``) first copies the bias into every row
    of its output, and reads it back (on an H200 at warpsim 536d8d6, four such copies of train-ref's further
    layers, and two of the policy heads, took 0.25 ms of the fused update's 2.77 ms an optimizer step)."""
    for layer in layers:
        if isinstance(layer, StackedLinear):
            product = torch.bmm(inputs, layer.weight.transpose(1, 2))
            inputs = product + layer.bias.to(product.dtype).unsqueeze(1)
        else:
            inputs = layer(inputs)
    return inputs


def _linears(trunk: nn.Module) -> list[StackedLinear]:
    return [module for module in trunk.modules() if isinstance(module, StackedLinear)]


def _packed(trunk: nn.Module) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A stacked trunk's weights and biases as ``fused_forward.actor_critic`` takes them, before their rounding
    (``fused_forward.autocast_operands``): its first layer's (the weight's rows aligned as the observations') and
    its further layers' stacked ([R, L - 1, H, H] and [R, L - 1, H])."""
    first, *further = _linears(trunk)
    runs, hidden = first.weight.shape[:2]
    if not further:
        stacked = first.weight.new_empty((runs, 0, hidden, hidden)), first.bias.new_empty((runs, 0, hidden))
    else:
        stacked = torch.stack([layer.weight for layer in further], 1), torch.stack([layer.bias for layer in further], 1)
    return [(fused_forward.aligned_rows(first.weight), first.bias), stacked]


class RunPolicies(HeadsByRole):
    """Every role's networks for R training runs, stacked (``StackedActorCritic``), made from
    each run's ``RolePolicies`` (so each run starts from the networks it would alone).

    forward(list of float[R, B_r, D], role_names) -> list of (logits, value), one per named role.
    """

    def __init__(self, runs: list[RolePolicies]):
        super().__init__()
        self.role_names = runs[0].role_names
        self.heads = runs[0].heads
        """Each role's action head, by role name."""
        self.networks = nn.ModuleList(StackedActorCritic([policies.network(name) for policies in runs])
                                      for name in self.role_names)
        self.fused = False
        """Whether every role's networks play as warpsim's kernel (``StackedActorCritic.fused``), as the trainer's
        fused path does under bf16."""
        self.gradient_kernels = False
        """Whether, with ``fused``, they learn by the kernels too (their gradients as kernels); otherwise a forward
        pass that records gradients runs the eager networks (``TrainConfig.gradient_kernels``)."""
        self.loss_kernels = False
        """Whether, with ``gradient_kernels``, the update's loss is computed in the gradients' kernels too
        (``fused_loss``, ``TrainConfig.gradient_kernels='loss'``)."""

    def forward(self, observations: list[torch.Tensor], role_names: list[str] | None = None,
                weights: dict[str, tuple] | None = None, operands: bool = False):
        """``weights``, with ``fused``: the named roles' ``fused_weights``, made beforehand. With ``operands``, each
        named role's networks' ``fused_operands`` on its observations in place of their outputs: what the update's
        loss in the gradients' kernels takes (``loss_kernels``), as ``functional_call`` makes them of the parameters
        it is given."""
        names = self.role_names if role_names is None else role_names
        if operands:
            return [self.network(name).fused_operands(batch) for name, batch in zip(names, observations)]
        if self.fused and (self.gradient_kernels or not torch.is_grad_enabled()):
            return [self.network(name).fused(batch, None if weights is None else weights[name])
                    for name, batch in zip(names, observations)]
        return [self.network(name)(batch) for name, batch in zip(names, observations)]

    def fused_weights(self, role_names: list[str]) -> dict[str, tuple] | None:
        """With ``fused``, the named roles' networks' weights as the fused kernel takes them
        (``StackedActorCritic.fused_weights``), by role name: made once, they serve every step of a
        rollout, whose networks do not change (one conversion of them a rollout, not a step). None
        otherwise."""
        return {name: self.network(name).fused_weights() for name in role_names} if self.fused else None

    def network(self, role_name: str) -> StackedActorCritic:
        """The stacked networks of one role."""
        network = self.networks[self.role_names.index(role_name)]
        assert isinstance(network, StackedActorCritic)
        return network

    def run_state_dict(self, run: int) -> dict[str, torch.Tensor]:
        """Run ``run``'s networks as a ``RolePolicies`` state dict (on the CPU)."""
        return {name: tensor[run].cpu() for name, tensor in self.state_dict().items()}

    @torch.no_grad()
    def load_run_state_dict(self, run: int, state: dict[str, torch.Tensor]) -> None:
        """Loads a ``RolePolicies`` state dict into run ``run``; a RuntimeError naming the entry that does not fit."""
        own = self.state_dict()
        if set(own) != set(state):
            missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
            raise RuntimeError(f"missing {missing[:3]}, unexpected {unexpected[:3]}")
        for name, tensor in own.items():
            if tuple(state[name].shape) != tuple(tensor.shape[1:]):
                raise RuntimeError(f"{name} has shape {tuple(state[name].shape)}, expected {tuple(tensor.shape[1:])}")
            tensor[run].copy_(state[name])

    def noise(self, role_names: list[str], rows: list[int], generators: list[torch.Generator],
              device: torch.device) -> list[list[tuple]]:
        """The draws ``act_with`` samples from for the named roles of ``rows`` agents each, by role and run:
        each run's from its own generator (``roles_noise``), as a run alone draws them."""
        heads = [self.heads[name] for name in role_names]
        size = joint_draw_size(heads, rows)
        # Discrete draws: every run's in one buffer, a run's after another's, where the rollout's kernel reads them
        # as they lie (``fused_sampling.launch_sample``), with no copy of them at every step.
        buffers = [None] * len(generators) if size is None else torch.empty((len(generators), size), device=device)
        by_run = [roles_noise(heads, rows, generator, device, out=buffer)
                  for generator, buffer in zip(generators, buffers)]
        return [[run_noise[role] for run_noise in by_run] for role in range(len(rows))]

    def act_with(self, inputs: list[torch.Tensor], role_names: list[str], noise: list[list[tuple]], *,
                 autocast: Callable[[], AbstractContextManager] = contextlib.nullcontext,
                 weights: dict[str, tuple] | None = None) -> list[Acted]:
        """``RolePolicies.act`` for every run at once on inputs float[R, B_r, D], sampling from draws made
        beforehand (``noise``: each run's from its own generator, so its draws are those it would make
        alone), with no generator in it, so that it compiles whole; ``weights``: the named roles'
        ``fused_weights``, made beforehand. Returns [R, B, ...] tensors."""
        acted = []
        for name, batch, role_noise in zip(role_names, inputs, noise):
            head, network = self.heads[name], self.network(name)
            role_weights = None if weights is None else weights[name]
            if self.fused and isinstance(head, CategoricalHeads):  # networks, draws and log-probabilities: one kernel
                actions, log_prob, values = network.fused_sample(batch, [draws for run in role_noise for draws in run],
                                                                 list(head.action_levels), role_weights)
            else:
                with contextlib.nullcontext() if self.fused else autocast():
                    (policy, values), = self([batch], [name], None if weights is None else {name: role_weights})
                actions = torch.stack([head.sample_with(policy[run], run_noise)
                                       for run, run_noise in enumerate(role_noise)])
                log_prob = head.log_prob(policy, actions)
            acted.append(Acted(actions, log_prob, network.returns_scale(values.float())))
        return acted
