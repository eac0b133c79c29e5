"""The trainer's update: epochs of clipped PPO over the last rollout, for every run of a batch.

Everything here is per run: GAE with each run's gamma and lambda, each run's value
statistics and advantage normalisation, each run's minibatch order (its own generator),
each run's loss with its own coefficients, its gradient norm clipped over its own
parameters, and Adam at its own rate moved by its own KL schedule (``RunAdam``,
``LearningRates``). The runs' losses are summed for one backward pass: each run's loss
depends on its own parameters only, so each gets its own gradient. Nothing here reads the
device from the host, so that a CUDA graph can capture the update whole.

On the fused path (``compiled``) a minibatch step is one compiled function: the minibatch's
gather, the forward passes, the loss, the gradients (``torch.func.grad``), their clipping,
Adam and the step's statistics; GAE is one more. The eager path is the reference, with
autograd and the optimizer.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

import torch
from torch.func import functional_call, grad

from warpsim.roles import Role
from warpsim.train import ppo
from warpsim.train.action_heads import CategoricalHeads
from warpsim.train.adam import RunAdam, adam_update
from warpsim.train.compiled import Compiled
from warpsim.train.config import TrainConfig
from warpsim.train.distributed import World
from warpsim.train.gradient_norms import gradient_norms
from warpsim.train.loss import STATS, MinibatchLoss
from warpsim.train.placement import RolloutMirror
from warpsim.train.rollout import RoleRollout, Samples
from warpsim.train.run_policies import RunPolicies
from warpsim.train.runs import per_run
from warpsim.train.schedule import LearningRates

UPDATE_STATS = STATS
"""Columns of ``Learner.update_stats``, one row per minibatch of the last update."""
APPROX_KL = UPDATE_STATS.index("approx_kl")


@dataclass
class Learner:
    """The optimizer, the learning rates, the loss and the update's statistics; ``learn(next_values)``."""

    configs: list[TrainConfig]
    policies: RunPolicies
    model: torch.nn.Module
    """``policies``, or their DistributedDataParallel wrapper under torchrun."""
    learners: list[Role]
    """The roles that learn, in the order of ``storage``."""
    storage: dict[str, RoleRollout]
    terminated: torch.Tensor
    truncated: torch.Tensor
    mirror: RolloutMirror | None
    """The environments' side of the rollout on the networks' device, when it lives elsewhere."""
    generators: list[torch.Generator]
    minibatches: int
    precision: str
    world: World
    device: torch.device
    autocast: Callable[[], AbstractContextManager] = contextlib.nullcontext
    compiled: bool = False
    """Whether a minibatch step and GAE run fused, one compiled function each (compiled.py)."""
    scaler: torch.amp.GradScaler | None = field(init=False)
    """fp16's gradient scaler (None otherwise)."""

    def __post_init__(self):
        configs, device, runs = self.configs, self.device, len(self.configs)
        networks = [self.policies.network(role.name) for role in self.learners]
        self.clipped_groups = [group for network in networks for group in network.parameter_groups()]
        """Parameters whose gradient norm is clipped together, per run: each learning role's actor and critic."""
        self.max_grad_norm = per_run(configs, "max_grad_norm", device)
        self.gamma = per_run(configs, "gamma", device)[:, None, None]
        self.gae_lambda = per_run(configs, "gae_lambda", device)[:, None, None]
        self.learning_rates = LearningRates(configs, len(self.learners), device)
        self.scaler = torch.amp.GradScaler(device.type) if self.precision == "fp16" else None
        # One parameter group per learning role, each reading its runs' rates from a device tensor,
        # so that a graph can capture the step.
        self.optimizer = RunAdam([{"params": list(network.parameters()), "lr": self.learning_rates.rates[:, index]}
                                  for index, network in enumerate(networks)])
        self.loss = MinibatchLoss(configs, device, fused=self.compiled)
        """One learning role's loss on a minibatch."""
        self.nonfinite = torch.zeros(runs, dtype=torch.bool, device=device)
        """Per run, whether its loss has been NaN or infinite."""
        self.update_stats = torch.zeros(runs, configs[0].epochs * self.minibatches, len(UPDATE_STATS), device=device)
        self.epoch_kl = torch.zeros(runs, len(self.learners), device=device)
        """Each run's and learning role's mean approx_kl over the minibatches of the running epoch."""
        self.explained_variance = torch.zeros(runs, device=device)
        """How much of the returns' variance the values explained in the last rollout (mean over learning roles)."""
        self.run_index = torch.arange(runs, device=device)[:, None]
        """int64[R, 1]: picks each run's row of the samples with its own minibatch indices."""
        self.gae: Callable[..., tuple[torch.Tensor, torch.Tensor]] = (
            Compiled(ppo.gae, "GAE") if self.compiled else ppo.gae)
        self.fused_step: Compiled[None] | None = (
            Compiled(self._fused_step, "the update's minibatch step", _ways_out(self.policies)) if self.compiled
            else None)
        """The whole minibatch step as one compiled function, on the fused path (None: eager)."""
        if self.compiled:
            self._set_up_fused_step()

    def learn(self, next_values: list[torch.Tensor]) -> None:
        """``epochs`` passes of clipped PPO over the rollout, in shuffled minibatches, given each
        learning role's value of the observations after it float32[R, E, n]."""
        rollouts, terminated, truncated = self._rollout_on_policy_device()
        samples, explained = [], []
        for role, rollout, next_value in zip(self.learners, rollouts, next_values):
            # GAE runs over the steps: [T, R, E, n], each run with its own gamma and lambda.
            advantages, returns = (x.transpose(0, 1) for x in self.gae(
                rollout.rewards.transpose(0, 1), rollout.values.transpose(0, 1), terminated.transpose(0, 1),
                truncated.transpose(0, 1), next_value, self.gamma, self.gae_lambda))
            explained.append(ppo.explained_variance(rollout.values.flatten(1), returns.flatten(1)))
            samples.append(self._value_targets(role.name, Samples.of(rollout, advantages, returns)))
        self.explained_variance.copy_(torch.stack(explained).mean(0))
        row = 0
        for _ in range(self.configs[0].epochs):
            # Each role's epoch order int64[R, N], each run's row from its own generator, cut into minibatches.
            orders = [torch.stack([torch.randperm(s.num_samples, device=self.device, generator=generator)
                                   for generator in self.generators]).tensor_split(self.minibatches, dim=1)
                      for s in samples]
            self.epoch_kl.zero_()
            for m in range(self.minibatches):
                picks = [order[m] for order in orders]
                if self.fused_step is not None:
                    self.fused_step(samples, picks, self.update_stats[:, row])
                else:
                    self.step_on_minibatch([s.pick(self.run_index, p) for s, p in zip(samples, picks)], row)
                row += 1
            self.world.all_reduce_mean(self.epoch_kl)  # every process moves its rates alike
            self.learning_rates.end_epoch(self.epoch_kl)

    def _value_targets(self, role_name: str, samples: Samples) -> Samples:
        """``samples`` with returns and values in the units the role's critic learns: normalised
        by each run's running statistics of the returns, after merging these ones, when it normalises."""
        normalizer = self.policies.network(role_name).value_normalizer
        if normalizer is None:
            return samples
        normalizer.update(samples.returns, self.world.all_reduce_sum)
        return samples._replace(returns=normalizer.normalize(samples.returns),
                                values=normalizer.normalize(samples.values))

    def _rollout_on_policy_device(self) -> tuple[list[RoleRollout], torch.Tensor, torch.Tensor]:
        """Each learning role's rollout, terminated and truncated, all on the networks' device."""
        rollouts = list(self.storage.values())
        if self.mirror is None:
            return rollouts, self.terminated, self.truncated
        # Hybrid: the environments' side moves over once per iteration, one copy per buffer.
        n, moved = len(rollouts), self.mirror.refresh()
        return ([dataclasses.replace(rollout, observations=observations, rewards=rewards)
                 for rollout, observations, rewards in zip(rollouts, moved[:n], moved[n:2 * n])],
                moved[2 * n], moved[2 * n + 1])

    def step_on_minibatch(self, minibatches: list[Samples], row: int) -> None:
        """One eager optimizer step on every run's and learning role's minibatch; its statistics go into
        ``update_stats[:, row]``."""
        with self.autocast():
            outputs = self.model([batch.observations for batch in minibatches], [role.name for role in self.learners])
        loss, stats = self._losses(minibatches, outputs)
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler is None:
            loss.sum().backward()
            self._clip_gradients()
            self.optimizer.step()
        else:
            self.scaler.scale(loss.sum()).backward()
            self.scaler.unscale_(self.optimizer)
            self._clip_gradients()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        self._record(loss.detach(), stats, self.update_stats[:, row])

    def _losses(self, minibatches: list[Samples], outputs: list) -> tuple[torch.Tensor, torch.Tensor]:
        """Each run's loss float32[R], summed over the learning roles, and their statistics [L, R, STATS]."""
        loss = torch.zeros(len(self.configs), device=self.device)
        per_role = []
        for role, batch, (logits, value) in zip(self.learners, minibatches, outputs):
            loss, role_stats = self.loss(loss, self.policies.heads[role.name], logits, value, batch)
            per_role.append(role_stats)
        return loss, torch.stack(per_role)

    def _losses_in_kernels(self, minibatches: list[Samples], picks: list[torch.Tensor],
                           operands: list[tuple]) -> tuple[torch.Tensor, torch.Tensor]:
        """``_losses`` computed in the gradients' kernels, from each learning role's networks' ``fused_operands``
        on its rollout's observations (their last, the shared trunk's flag, dropped: a trunk each) and its
        minibatch, whose rows of them are ``picks``."""
        loss = torch.zeros(len(self.configs), device=self.device)
        per_role = []
        for role, batch, role_picks, (observations, *weights) in zip(self.learners, minibatches, picks, operands):
            head = self.policies.heads[role.name]
            assert isinstance(head, CategoricalHeads)
            loss, role_stats = self.loss.in_kernels(loss, head, observations, role_picks, tuple(weights[:-1]), batch)
            per_role.append(role_stats)
        return loss, torch.stack(per_role)

    def _record(self, loss: torch.Tensor, stats: torch.Tensor, row: torch.Tensor) -> None:
        """A minibatch step's statistics: the epoch's KL, whether a loss was not finite, and the step's
        row of ``update_stats`` (``row``, float32[R, STATS])."""
        self.epoch_kl += stats[:, :, APPROX_KL].T / self.minibatches
        self.nonfinite |= ~torch.isfinite(loss)
        row[:, 0] = stats[:, :, 0].amax(0)
        row[:, 1:] = stats[:, :, 1:].mean(0)

    def _clip_gradients(self) -> None:
        clip_gradients([[parameter.grad for parameter in group if parameter.grad is not None]
                        for group in self.clipped_groups], self.max_grad_norm)

    def _set_up_fused_step(self) -> None:
        """What the compiled step reads and writes: the learning parameters (by name, as aliases the
        step updates in place), their groups for clipping, their Adam state and rates."""
        names = {id(parameter): name for name, parameter in self.policies.named_parameters()}
        self.learned = {names[id(parameter)]: parameter.detach() for group in self.optimizer.param_groups
                        for parameter in group["params"]}
        self.group_names = [[names[id(parameter)] for parameter in group] for group in self.clipped_groups]
        self.adam_states = {names[id(parameter)]: self.optimizer.state_of(parameter)
                            for group in self.optimizer.param_groups for parameter in group["params"]}
        self.rates = {names[id(parameter)]: group["lr"] for group in self.optimizer.param_groups
                      for parameter in group["params"]}

    def _fused_step(self, samples: list[Samples], picks: list[torch.Tensor], row: torch.Tensor) -> None:
        """The minibatch step of the fused path, for ``torch.compile``: each role's minibatch of
        ``samples`` at the runs' indices ``picks`` int64[R, b], the networks, the losses, the gradients,
        their clipping, Adam, and the statistics (``_record``, into ``row``)."""
        # the loss in the gradients' kernels reads the minibatch's observations where they lie in the rollout
        minibatches = [s.pick(self.run_index, p, observations=not self.policies.loss_kernels)
                       for s, p in zip(samples, picks)]
        names = [role.name for role in self.learners]

        def total(learned: dict[str, torch.Tensor]) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
            observations = [batch.observations for batch in minibatches]
            if self.policies.loss_kernels:
                operands = functional_call(self.policies, learned, (observations, names), {"operands": True})
                loss, stats = self._losses_in_kernels(minibatches, picks, operands)
            else:
                with self.autocast():
                    outputs = functional_call(self.policies, learned, (observations, names))
                loss, stats = self._losses(minibatches, outputs)
            return loss.sum(), (loss, stats)

        gradients, (loss, stats) = grad(total, has_aux=True)(self.learned)
        with torch.no_grad():
            clip_gradients([[gradients[name] for name in group] for group in self.group_names], self.max_grad_norm)
            names = list(self.learned)
            adam_update([self.learned[name] for name in names], [gradients[name] for name in names],
                        [self.adam_states[name] for name in names], [self.rates[name] for name in names])
            self._record(loss, stats, row)

    def run_state_dict(self, run: int) -> dict:
        """Run ``run``'s optimizer, rates and (shared) gradient scaler, as a checkpoint of it alone holds them."""
        return {"learning_rates": self.learning_rates.run_state_dict(run),
                "optimizer": self.optimizer.run_state_dict(run),
                "scaler": None if self.scaler is None else self.scaler.state_dict()}


def _ways_out(policies: RunPolicies) -> tuple[str, ...]:
    """The settings that turn off, one after the other, what the fused update runs of warpsim's kernels (before
    compile='off')."""
    if policies.loss_kernels:
        return "gradient_kernels='on'", "gradient_kernels='off'"
    return ("gradient_kernels='off'",) if policies.gradient_kernels else ()


def clip_gradients(groups: list[list[torch.Tensor]], max_norm: torch.Tensor) -> None:
    """Scales each run's gradients float[R, ...] of each group down to at most its ``max_norm``
    float32[R] (in place), as ``clip_grad_norm_`` would on that run's parameters alone."""
    gradients = [gradient for group in groups for gradient in group]
    # The norms of every group's gradients at once, of the gradients made in one foreach operation: compiled, an
    # op's inputs are made one kernel each otherwise.
    norms = gradient_norms(torch._foreach_mul(gradients, 1.0)).split([len(group) for group in groups], dim=1)
    for group, group_norms in zip(groups, norms):
        # [R, P], each run's row contiguous: the norm over its parameters sums as it would alone.
        scale = (max_norm / (group_norms.norm(dim=1) + 1e-6)).clamp(max=1.0)
        for gradient in group:
            gradient.mul_(scale.view(-1, *(1,) * (gradient.dim() - 1)))
