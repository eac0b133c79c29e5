"""PPO on the device: rollouts through the environment's own buffers, then clipped updates.

One iteration is a rollout of T steps of every environment (observations read from
and actions written into the environment's buffers, with no host synchronisation)
and an update of ``epochs`` passes of shuffled minibatches. Networks run under
autocast in the configured precision; log-probabilities, ratios, advantages and
returns stay float32, stored actions int32, stored observations bfloat16 under bf16
(what the networks' first layer casts them to anyway) and float32 otherwise. On CUDA
the rollout and the update each replay a captured graph (``graphs``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable

import torch
from torch.nn.parallel import DistributedDataParallel

from warpsim.device import Placement
from warpsim.errors import InvalidValueError, RunFileError, WarpsimError
from warpsim.graph import CUDA_GRAPH, EAGER
from warpsim.registry import layout, make
from warpsim.roles import roles_of
from warpsim.train import opponents, ppo
from warpsim.train.checkpoint import load_into, signature
from warpsim.train.collect import collect_rollout, stagger_starts
from warpsim.train.config import TrainConfig
from warpsim.train.distributed import World
from warpsim.train.episodes import EpisodeStats
from warpsim.train.graphs import CapturedGraph, resolve_graphs
from warpsim.train.loss import STATS, MinibatchLoss
from warpsim.train.placement import RolloutMirror, place_training
from warpsim.train.policy import RolePolicies
from warpsim.train.rollout import RoleRollout, Samples
from warpsim.train.schedule import LearningRates
from warpsim.train.stacking import ObservationStack
from warpsim.train.storage import check_training_fits

UPDATE_STATS = STATS
"""Columns of ``Trainer.update_stats``, one row per minibatch of the last update."""
APPROX_KL = UPDATE_STATS.index("approx_kl")
NETWORK_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
"""What the networks compute in, by resolved precision (under autocast but for fp32)."""
NETWORK_SHAPE = ("stack_observations", "hidden_size", "hidden_layers", "shared_trunk", "value_normalization")
"""The config fields a frozen opponent's run must share with this one: its network is loaded into this run's."""


class TrainingDiverged(WarpsimError, RuntimeError):
    """The loss became NaN or infinite."""


class Trainer:
    """Owns the environment, the role policies, the optimizer and the rollout storage."""

    def __init__(self, config: TrainConfig, world: World | None = None, *, load_opponents: bool = True):
        """``load_opponents=False`` leaves frozen opponents' networks as initialised (a resume
        loads them from the run's own checkpoint)."""
        self.config = config
        self.world = world or World()
        self._place()
        self._make_environments()
        self._set_up_roles()
        self._set_up_networks(load_opponents)
        self._set_up_update()
        self.stats = EpisodeStats(self.env, self.roles)
        self.iteration = 0
        self.env_steps = 0
        self.step_actions = torch.zeros_like(self.env.actions, device=self.device) if self.hybrid else self.env.actions
        """Each step's actions as the networks write them; copied to ``env.actions`` once per step when hybrid."""
        self._allocate_rollout()
        self.rollout: Callable[[], list[torch.Tensor]] = (
            CapturedGraph(lambda _: self.collect(), self.generator, self.device) if self.graphs else self.collect)
        """Collects one rollout, by replaying its captured graph or eagerly (``collect``)."""
        self.update: Callable[[list[torch.Tensor]], None] = (
            CapturedGraph(self._learn_for_capture, self.generator, self.device, settings=self._captured_settings)
            if self.update_launches == CUDA_GRAPH else self.learn)
        """Updates the policies on the last rollout, given its next values: by replaying its captured
        graph or eagerly (``learn``)."""
        stagger_starts(self)
        self.loss.compile_for(self.samples_per_role, self.minibatches, NETWORK_DTYPES[self.precision], self.device)

    def _place(self) -> None:
        """Where the environments and the networks run, how the rollout launches, the precision."""
        config = self.config
        self.env_placement, self.device = place_training(config.backend, config.policy_device, self.world)
        """Where the environments run; where the networks, the optimizer and the networks' side of the rollout live."""
        self.env_device = self.env_placement.torch_device
        self.hybrid = self.device != self.env_device
        """Whether the networks run on another device than the environments (``config.policy_device``)."""
        self.graphs = resolve_graphs(config.graphs, self.env_device, self.world.size, self.hybrid)
        """Whether each rollout replays one captured CUDA graph (``config.graphs``)."""
        self.launches = CUDA_GRAPH if self.graphs else EAGER
        """How the rollout launches its work: ``"cuda-graph"`` or ``"eager"``."""
        self.precision = resolve_precision(config.precision, self.device)
        if "cpu" in (self.device.type, self.env_device.type) and "OMP_NUM_THREADS" not in os.environ:
            # The networks are small: on a CPU, more threads mostly wait on each other.
            torch.set_num_threads(1)

    def _make_environments(self) -> None:
        """Refuses a run that cannot fit, from the environments' layout, before making them."""
        config, env_placement = self.config, self.env_placement
        spec, env_bytes_per_env = layout(config.env, 1, **config.env_params)
        check_training_fits(config, spec, env_bytes_per_env, env_placement, self.precision)
        if self.hybrid:
            check_training_fits(config, spec, 0, Placement(env_placement.backend, self.device), self.precision)
        self.env = make(config.env, config.num_envs, backend=env_placement.backend,
                        device=env_placement.torch_device, seed=config.seed + self.world.rank, checked=False,
                        **config.env_params)

    def _set_up_roles(self) -> None:
        """The roles, which of them learn, and the minibatches their samples split into."""
        config = self.config
        self.roles = roles_of(self.env.spec, self.env_device)
        self.policy_roles = {role.name: role.on(self.device) for role in self.roles}
        """The roles, their agent indices on the networks' device."""
        opponents.check_roles(config.opponents, self.env, [role.name for role in self.roles])
        self.learners = [role for role in self.roles if role.name not in config.opponents]
        """The roles that learn; the others are ``config.opponents``."""
        random_roles = opponents.random_roles(config.opponents)
        self.random_roles = [role for role in self.roles if role.name in random_roles]
        self.acting = [role for role in self.roles if role.name not in random_roles]
        """The roles that follow a policy, learning or frozen."""
        self.samples_per_role = [config.rollout_steps * config.num_envs * role.count for role in self.learners]
        """Samples a rollout holds of each learning role."""
        self.minibatches = config.minibatch_count(max(self.samples_per_role))
        """Minibatches per epoch (``config.minibatches``, or more by ``config.minibatch_size``)."""
        for role, samples in zip(self.learners, self.samples_per_role):
            if samples < self.minibatches:
                raise InvalidValueError(f"a rollout holds {samples} samples of role {role.name!r} "
                                        f"(rollout_steps x num_envs x its {role.count} agents), too few for "
                                        f"{self.minibatches} minibatches; raise rollout_steps or num_envs, or lower "
                                        f"minibatches or raise minibatch_size")

    def _set_up_networks(self, load_opponents: bool) -> None:
        """Every role's network; the opponents' frozen (loaded from their runs when ``load_opponents``)."""
        config = self.config
        self.inputs = ObservationStack(self.env, config.stack_observations, NETWORK_DTYPES[self.precision])
        torch.manual_seed(config.seed)  # the same initial networks on every rank
        self.policies = RolePolicies.for_config(config, self.env.spec, [role.name for role in self.roles],
                                                self.inputs.input_size).to(self.device)
        """Every role's network (``policies.network(role_name)``), opponents' included."""
        shapes = {name: getattr(config, name) for name in NETWORK_SHAPE}
        for role, kind in config.opponents.items():
            network = self.policies.network(role)
            if load_opponents and kind != opponents.RANDOM:
                network.load_state_dict(opponents.frozen_network_state(role, kind, self.env, self.policies.role_names,
                                                                       shapes))
            network.requires_grad_(False)
        self.levels = torch.tensor(self.env.spec.action_levels, device=self.device)
        self.model: torch.nn.Module = self.policies
        if self.world.size > 1:
            self.model = DistributedDataParallel(self.policies)

    def _set_up_update(self) -> None:
        """The optimizer, its learning rates, the gradient scaler, the loss and the update's statistics."""
        config = self.config
        networks = [self.policies.network(role.name) for role in self.learners]
        self.clipped_groups = [group for network in networks for group in network.parameter_groups()]
        """Parameters whose gradient norm is clipped together: each learning role's actor and critic."""
        self.learning_rates = LearningRates(config, len(self.learners), self.device)
        self.scaler = torch.amp.GradScaler(self.device.type) if self.precision == "fp16" else None
        # The gradient scaler reads its overflow flag on the host at every step: no capture under fp16.
        self.update_launches = CUDA_GRAPH if self.graphs and self.scaler is None else EAGER
        """How the update launches its work: ``"cuda-graph"``, or ``"eager"`` (always under fp16)."""
        # One parameter group per learning role, each reading its rate from a device tensor; on CUDA
        # the fused Adam, whose step counts live on the device too, so that a graph can capture it.
        self.optimizer = torch.optim.Adam(
            [{"params": list(network.parameters()), "lr": rate}
             for network, rate in zip(networks, self.learning_rates.rates)],
            lr=config.learning_rate, eps=1e-5, fused=self.device.type == "cuda")
        self.loss = MinibatchLoss(config, self.env.spec.action_levels, compiled=config.compile_loss)
        """One learning role's loss on a minibatch, eager or compiled (``config.compile_loss``)."""
        self.generator = torch.Generator(self.device).manual_seed(config.seed + self.world.rank)
        self.nonfinite = torch.zeros((), dtype=torch.bool, device=self.device)
        self.update_stats = torch.zeros(config.epochs * self.minibatches, len(UPDATE_STATS), device=self.device)
        self.epoch_kl = torch.zeros(len(self.learners), device=self.device)
        """Each learning role's mean approx_kl over the minibatches of the running epoch."""
        self.explained_variance = torch.zeros((), device=self.device)
        """How much of the returns' variance the values explained in the last rollout (mean over learning roles)."""

    def _captured_settings(self) -> dict:
        """What a captured update bakes in, by name: the config fields (learning rate bounds,
        coefficients, epochs), the minibatch count and the precision."""
        settings = {f"config field {name}": value for name, value in self.config.to_dict().items()}
        return {**settings, "the minibatch count": self.minibatches, "the precision": self.precision}

    def _allocate_rollout(self) -> None:
        t, e, spec = self.config.rollout_steps, self.env.num_envs, self.env.spec
        d, a = self.inputs.input_size, len(spec.action_levels)

        # The environments' side is pinned when it moves from the CPU to a GPU for the update.
        pin = self.hybrid and self.env_device.type == "cpu" and self.device.type == "cuda"

        def zeros(*shape: int, dtype: torch.dtype = torch.float32, env_side: bool = False) -> torch.Tensor:
            if env_side:
                return torch.zeros(shape, dtype=dtype, device=self.env_device, pin_memory=pin)
            return torch.zeros(shape, dtype=dtype, device=self.device)

        # Under bf16 the networks' first layer rounds its inputs to bfloat16: storing them so loses nothing
        # (storage.observation_bytes counts them so).
        observed = torch.bfloat16 if self.precision == "bf16" else torch.float32
        self.storage = {role.name: RoleRollout(
            observations=zeros(t, e, role.count, d, dtype=observed, env_side=True),
            actions=zeros(t, e, role.count, a, dtype=torch.int32),
            log_probs=zeros(t, e, role.count), values=zeros(t, e, role.count),
            rewards=zeros(t, e, role.count, env_side=True)) for role in self.learners}
        """Each learning role's rollout, by role name, in the order of ``learners``."""
        self.terminated = zeros(t, e, 1, dtype=torch.bool, env_side=True)
        self.truncated = zeros(t, e, 1, dtype=torch.bool, env_side=True)
        stored = self.storage.values()
        self.mirror = RolloutMirror([*(s.observations for s in stored), *(s.rewards for s in stored),
                                     self.terminated, self.truncated], self.device) if self.hybrid else None
        """The environments' side of the rollout on the networks' device, when hybrid."""

    def autocast(self):
        if self.precision == "fp32":
            return contextlib.nullcontext()
        # No cache of cast weights: a captured graph must cast them afresh at every replay.
        return torch.autocast(self.device.type, dtype=NETWORK_DTYPES[self.precision], cache_enabled=False)

    # ----- one iteration ------------------------------------------------------------
    def iterate(self, after_rollout: Callable[[], None] | None = None) -> None:
        """Collects one rollout and updates the policies on it; ``after_rollout`` is called
        in between (the benchmark's mark between the two)."""
        self.learning_rates.start_iteration(self.iteration)
        next_values = self.rollout()
        if after_rollout is not None:
            after_rollout()
        self.update(next_values)
        self.iteration += 1
        self.env_steps += self.config.rollout_steps * self.env.num_envs

    def collect(self) -> list[torch.Tensor]:
        """Steps every environment T times into the rollout storage; returns each learning role's
        value of the final observations (``collect.collect_rollout``)."""
        return collect_rollout(self)

    def learn(self, next_values: list[torch.Tensor]) -> None:
        """``epochs`` passes of clipped PPO over the rollout, in shuffled minibatches, given each
        learning role's value of the observations after it float32[E, n]. Nothing here reads the
        device from the host, so that a CUDA graph can capture it whole."""
        c = self.config
        rollouts, terminated, truncated = self._rollout_on_policy_device()
        samples, explained = [], []
        for role, rollout, next_value in zip(self.learners, rollouts, next_values):
            advantages, returns = ppo.gae(rollout.rewards, rollout.values, terminated, truncated, next_value,
                                          c.gamma, c.gae_lambda)
            explained.append(ppo.explained_variance(rollout.values, returns))
            samples.append(self._value_targets(role.name, Samples.of(rollout, advantages, returns)))
        self.explained_variance.copy_(torch.stack(explained).mean())
        row = 0
        for _ in range(c.epochs):
            orders = [torch.randperm(s.num_samples, device=self.device, generator=self.generator)
                      .tensor_split(self.minibatches) for s in samples]
            self.epoch_kl.zero_()
            for m in range(self.minibatches):
                self._step_on_minibatch([s.pick(order[m]) for s, order in zip(samples, orders)], row)
                row += 1
            self.world.all_reduce_mean(self.epoch_kl)  # every process moves its rates alike
            self.learning_rates.end_epoch(self.epoch_kl)

    def _learn_for_capture(self, next_values: list[torch.Tensor]) -> None:
        """``learn`` as the update graph runs it. Adam refuses to be captured unless its groups say
        ``capturable``, and warns when such groups step uncaptured (the warm-up): the flag is on
        only while capturing, so a checkpoint never carries it. The fused Adam's arithmetic is the
        same either way."""
        capturing = torch.cuda.is_current_stream_capturing()
        for group in self.optimizer.param_groups:
            group["capturable"] = capturing
        try:
            self.learn(next_values)
        finally:
            for group in self.optimizer.param_groups:
                group["capturable"] = False

    def _value_targets(self, role_name: str, samples: Samples) -> Samples:
        """``samples`` with returns and values in the units the role's critic learns: normalised
        by the running statistics of the returns, after merging these ones, when it normalises."""
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

    def _step_on_minibatch(self, minibatches: list[Samples], row: int) -> None:
        """One optimizer step on every learning role's minibatch; its statistics go into ``update_stats[row]``."""
        with self.autocast():
            outputs = self.model([batch.observations for batch in minibatches], [role.name for role in self.learners])
        loss = torch.zeros((), device=self.device)
        per_role = []
        for batch, (logits, value) in zip(minibatches, outputs):
            loss, role_stats = self.loss(loss, logits, value, batch)
            per_role.append(role_stats)
        stats = torch.stack(per_role)
        self.epoch_kl += stats[:, APPROX_KL] / self.minibatches
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler is None:
            loss.backward()
            self._clip_gradients()
            self.optimizer.step()
        else:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            self._clip_gradients()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        self.nonfinite |= ~torch.isfinite(loss.detach())
        self.update_stats[row, 0] = stats[:, 0].max()
        self.update_stats[row, 1:] = stats[:, 1:].mean(dim=0)

    def _clip_gradients(self) -> None:
        # On CUDA, foreach ops: a few launches per group, and no host read of the norm.
        for group in self.clipped_groups:
            torch.nn.utils.clip_grad_norm_(group, self.config.max_grad_norm, foreach=self.device.type == "cuda")

    # ----- reading and saving --------------------------------------------------------
    def read_metrics(self) -> dict:
        """Episode statistics since the last read and the last update's means (two host reads)."""
        *update, explained, nonfinite, rate = torch.cat([
            self.update_stats.mean(dim=0), self.explained_variance[None], self.nonfinite.float()[None],
            self.learning_rates.values().mean()[None]]).tolist()
        metrics = {"iteration": self.iteration, "env_steps": self.env_steps * self.world.size, "learning_rate": rate}
        metrics.update(self.stats.read())
        metrics.update(zip(UPDATE_STATS, update))
        metrics["explained_variance"] = explained
        metrics["diverged"] = nonfinite > 0
        return metrics

    def state_dict(self) -> dict:
        """Everything an exact resume needs; the per-rank parts gathered from every rank."""
        own = {"env": {name: tensor.cpu() for name, tensor in self._env_arrays().items()},
               "generator": self.generator.get_state(), "stats": self.stats.state_dict(),
               "inputs": self.inputs.state_dict()}
        return {
            "signature": signature(self.env), "config": self.config.to_dict(), "world_size": self.world.size,
            "iteration": self.iteration, "env_steps": self.env_steps,
            "learning_rates": self.learning_rates.state_dict(),
            "policies": self.policies.state_dict(), "optimizer": self.optimizer.state_dict(),
            "scaler": None if self.scaler is None else self.scaler.state_dict(),
            "ranks": self.world.gather(own),
        }

    def _env_arrays(self) -> dict[str, torch.Tensor]:
        """The environments' arrays a checkpoint holds, by name."""
        env = self.env
        return {"observations": env.observations, "actions": env.actions, "rewards": env.rewards,
                "done": env.done, **dict(env.state.items())}

    def load_state_dict(self, checkpoint: dict) -> None:
        """Continues from ``state_dict()``'s result, written by as many ranks as there are now."""
        if checkpoint["world_size"] != self.world.size:
            raise InvalidValueError(f"checkpoint {checkpoint.get('path')} was written by {checkpoint['world_size']} "
                             f"process(es); resume it with as many (now {self.world.size})")
        source = str(checkpoint.get("path", "given"))
        if "learning_rates" not in checkpoint:
            raise RunFileError(f"checkpoint {source} was written by an earlier warpsim, before per-role learning "
                               f"rates: evaluate, render or play against it, but train further in a new run")
        load_into(self.policies, checkpoint["policies"], "networks", source)
        load_into(self.optimizer, checkpoint["optimizer"], "optimizer state", source)
        if isinstance(self.update, CapturedGraph):
            self.update.reset()  # loading replaced the optimizer's state tensors that a capture reads
        for group, rate in zip(self.optimizer.param_groups, self.learning_rates.rates):
            group["lr"] = rate  # loading put the saved rates in the groups; the device tensors stay theirs
        if self.scaler is not None and checkpoint.get("scaler") is not None:
            load_into(self.scaler, checkpoint["scaler"], "gradient scaler state", source)
        try:
            own = checkpoint["ranks"][self.world.rank]
            for name, tensor in self._env_arrays().items():
                tensor.copy_(own["env"][name])
            self.generator.set_state(own["generator"])
            self.stats.load_state_dict(own["stats"])
            self.inputs.load_state_dict(own["inputs"])
        except (KeyError, IndexError, TypeError, RuntimeError) as error:
            raise RunFileError(f"checkpoint {source}: its environment state does not fit ({type(error).__name__}: "
                               f"{str(error).splitlines()[0] if str(error) else ''})") from None
        self.iteration = checkpoint["iteration"]
        self.env_steps = checkpoint["env_steps"]
        self.learning_rates.load_state_dict(checkpoint["learning_rates"])
        if checkpoint["config"]["iterations"] != self.config.iterations:
            self.learning_rates.extend_from(self.iteration)


def resolve_precision(precision: str, device: torch.device) -> str:
    """``auto`` is bf16 on CUDA and fp32 on the CPU; fp16 needs CUDA."""
    if precision == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    if precision == "fp16" and device.type != "cuda":
        raise InvalidValueError(f"precision='fp16' needs a CUDA device (the environments run on {device}); "
                         f"use fp32 or bf16")
    return precision
