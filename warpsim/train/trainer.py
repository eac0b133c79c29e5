"""PPO on the device for R training runs at once: rollouts through the environments' own
buffers, then clipped updates.

The runs share every shape (``runs.batch_key``); a single run is a batch of one. Each
run has its own environments, seed, generator, networks (stacked, ``RunPolicies``),
Adam moments and rates, schedule, value statistics, gradient clip, minibatch order,
episode statistics and divergence flag: nothing of one run reaches another. One
iteration is a rollout of T steps of every environment (observations read from and
actions written into the environments' buffers, with no host synchronisation) and an
update of ``epochs`` passes of shuffled minibatches. Networks run under
autocast in the configured precision; log-probabilities, ratios, advantages and
returns stay float32, stored actions int32, stored observations bfloat16 under bf16
(what the networks' first layer casts them to anyway) and float32 otherwise. On CUDA
the rollout and the update each replay a captured graph (``graphs``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Sequence

import torch
from torch.nn.parallel import DistributedDataParallel

from warpsim.device import Placement
from warpsim.environment import Environment
from warpsim.errors import InvalidValueError, RunFileError, WarpsimError
from warpsim.graph import CUDA_GRAPH, EAGER
from warpsim.registry import layout, make
from warpsim.roles import roles_of
from warpsim.train import opponents, ppo
from warpsim.train.adam import RunAdam
from warpsim.train.checkpoint import signature
from warpsim.train.collect import Collector
from warpsim.train.config import TrainConfig
from warpsim.train.distributed import World
from warpsim.train.episodes import EpisodeStats
from warpsim.train.graphs import CapturedGraph, resolve_graphs
from warpsim.train.loss import STATS, MinibatchLoss
from warpsim.train.placement import RolloutMirror, place_training
from warpsim.train.policy import RolePolicies, RunPolicies
from warpsim.train.rollout import RoleRollout, Samples
from warpsim.train.runs import batch_key, per_run
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


def _load_into(load: Callable[[], None], what: str, source: str) -> None:
    """Runs ``load``, a RunFileError naming the checkpoint when what it loads does not fit."""
    try:
        load()
    except (RuntimeError, ValueError, KeyError, TypeError, IndexError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise RunFileError(f"checkpoint {source}: its {what} do not fit ({first[:200]})") from None


class Trainer:
    """Owns the runs' environments, their stacked policies, the optimizer and the rollout storage."""

    def __init__(self, configs: TrainConfig | Sequence[TrainConfig], world: World | None = None, *,
                 load_opponents: bool = True):
        """``configs``: one run's config, or the configs of runs that share a batch (``runs.batch_key``).
        ``load_opponents=False`` leaves frozen opponents' networks as initialised (a resume
        loads them from the run's own checkpoint)."""
        self.configs = [configs] if isinstance(configs, TrainConfig) else list(configs)
        self.config = self.configs[0]
        """The first run's config: every setting that shapes the batch is the same in all of them."""
        self.runs = len(self.configs)
        self.world = world or World()
        self._check_batch()
        self._place()
        self._make_environments()
        self._set_up_roles()
        self._set_up_networks(load_opponents)
        self._set_up_update()
        self.stats = [EpisodeStats(env, self.roles) for env in self.envs]
        self.iteration = 0
        self.env_steps = 0
        """Environment steps each run has trained on (in this process)."""
        self._allocate_rollout()
        self.collector = Collector(self.envs, self.inputs, self.stats, self.policies, self.generators, self.roles,
                                   self.learners, self.random_roles, self.storage, self.terminated, self.truncated,
                                   self.device, self.autocast)
        self.rollout: Callable[[], list[torch.Tensor]] = (
            CapturedGraph(lambda _: self.collector.collect(), self.generators, self.device) if self.graphs
            else self.collector.collect)
        """Collects one rollout, by replaying its captured graph or eagerly (``Collector.collect``)."""
        self.update: Callable[[list[torch.Tensor]], None] = (
            CapturedGraph(self.learn, self.generators, self.device, settings=self._captured_settings)
            if self.update_launches == CUDA_GRAPH else self.learn)
        """Updates the policies on the last rollout, given its next values: by replaying its captured
        graph or eagerly (``learn``)."""
        self.collector.stagger_starts(self.config.stagger_steps)
        self.loss.compile_for(self.samples_per_role, self.minibatches, NETWORK_DTYPES[self.precision], self.device)

    @property
    def env(self) -> Environment:
        """The first run's environments (a single run's only ones)."""
        return self.envs[0]

    def _check_batch(self) -> None:
        """Runs that do not share their shapes cannot share a batch; several runs need one process."""
        if any(batch_key(config) != batch_key(self.config) for config in self.configs):
            raise InvalidValueError("these runs differ in a setting that shapes the batch; train them in separate "
                                    "batches (warpsim.train.runs.group_by_batch)")
        if self.runs > 1 and self.world.size > 1:
            raise InvalidValueError(f"{self.runs} runs in one batch under torchrun ({self.world.size} processes) "
                                    f"is not supported yet; train an experiment in one process, or its runs one "
                                    f"by one under torchrun")
        if self.config.precision == "fp16" and self.runs > 1:
            raise InvalidValueError(f"precision='fp16' with {self.runs} runs in a batch: its gradient scaler skips "
                                    f"every run's step when one run overflows; use bf16 or fp32")
        if len({repr(config.to_dict()) for config in self.configs}) != self.runs:
            raise InvalidValueError("two runs of the batch have the very same config; give each its own seed")

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
        """Refuses runs that cannot fit, from the environments' layout, before making them."""
        config, env_placement = self.config, self.env_placement
        spec, env_bytes_per_env = layout(config.env, 1, **config.env_params)
        check_training_fits(config, spec, env_bytes_per_env, env_placement, self.precision, self.runs)
        if self.hybrid:
            check_training_fits(config, spec, 0, Placement(env_placement.backend, self.device), self.precision,
                                self.runs)
        self.envs = [make(config.env, config.num_envs, backend=env_placement.backend,
                          device=env_placement.torch_device, seed=run.seed + self.world.rank, checked=False,
                          **config.env_params) for run in self.configs]
        """Each run's environments, seeded with its own seed."""

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
        self.samples_per_role = [config.rollout_steps * config.num_envs * role.count for role in self.learners]
        """Samples a rollout holds of each learning role, in each run."""
        self.minibatches = config.minibatch_count(max(self.samples_per_role))
        """Minibatches per epoch (``config.minibatches``, or more by ``config.minibatch_size``)."""
        for role, samples in zip(self.learners, self.samples_per_role):
            if samples < self.minibatches:
                raise InvalidValueError(f"a rollout holds {samples} samples of role {role.name!r} "
                                        f"(rollout_steps x num_envs x its {role.count} agents), too few for "
                                        f"{self.minibatches} minibatches; raise rollout_steps or num_envs, or lower "
                                        f"minibatches or raise minibatch_size")

    def _set_up_networks(self, load_opponents: bool) -> None:
        """Every run's networks, initialised from its seed as alone and stacked; opponents' frozen
        (loaded from their runs when ``load_opponents``)."""
        config = self.config
        self.inputs = [ObservationStack(env, config.stack_observations, NETWORK_DTYPES[self.precision])
                       for env in self.envs]
        role_names = [role.name for role in self.roles]
        shapes = {name: getattr(config, name) for name in NETWORK_SHAPE}
        frozen = {role: opponents.frozen_network_state(role, kind, self.env, role_names, shapes)
                  for role, kind in config.opponents.items() if load_opponents and kind != opponents.RANDOM}
        runs = []
        for run in self.configs:
            torch.manual_seed(run.seed)  # the same initial networks on every rank
            policies = RolePolicies.for_config(run, self.env.spec, role_names, self.inputs[0].input_size)
            for role, state in frozen.items():
                policies.network(role).load_state_dict(state)
            runs.append(policies)
        self.policies = RunPolicies(runs).to(self.device)
        """Every role's networks, opponents' included, stacked over the runs (``policies.network(role_name)``)."""
        for role in config.opponents:
            self.policies.network(role).requires_grad_(False)
        self.model: torch.nn.Module = self.policies
        if self.world.size > 1:
            self.model = DistributedDataParallel(self.policies)

    def _set_up_update(self) -> None:
        """The optimizer, its learning rates, the gradient scaler, the loss and the update's statistics."""
        configs, device = self.configs, self.device
        networks = [self.policies.network(role.name) for role in self.learners]
        self.clipped_groups = [group for network in networks for group in network.parameter_groups()]
        """Parameters whose gradient norm is clipped together, per run: each learning role's actor and critic."""
        self.max_grad_norm = per_run(configs, "max_grad_norm", device)
        self.gamma = per_run(configs, "gamma", device)[:, None, None]
        self.gae_lambda = per_run(configs, "gae_lambda", device)[:, None, None]
        self.learning_rates = LearningRates(configs, len(self.learners), device)
        self.scaler = torch.amp.GradScaler(device.type) if self.precision == "fp16" else None
        # The gradient scaler reads its overflow flag on the host at every step: no capture under fp16.
        self.update_launches = CUDA_GRAPH if self.graphs and self.scaler is None else EAGER
        """How the update launches its work: ``"cuda-graph"``, or ``"eager"`` (always under fp16)."""
        # One parameter group per learning role, each reading its runs' rates from a device tensor,
        # so that a graph can capture the step.
        self.optimizer = RunAdam([{"params": list(network.parameters()), "lr": self.learning_rates.rates[:, index]}
                                  for index, network in enumerate(networks)])
        self.loss = MinibatchLoss(configs, self.env.spec.action_levels, compiled=self.config.compile_loss,
                                  device=device)
        """One learning role's loss on a minibatch, eager or compiled (``config.compile_loss``)."""
        self.generators = [torch.Generator(device).manual_seed(run.seed + self.world.rank) for run in configs]
        """Each run's generator: its actions, minibatch orders and staggered starts."""
        self.nonfinite = torch.zeros(self.runs, dtype=torch.bool, device=device)
        """Per run, whether its loss has been NaN or infinite."""
        self.update_stats = torch.zeros(self.runs, self.config.epochs * self.minibatches, len(UPDATE_STATS),
                                        device=device)
        self.epoch_kl = torch.zeros(self.runs, len(self.learners), device=device)
        """Each run's and learning role's mean approx_kl over the minibatches of the running epoch."""
        self.explained_variance = torch.zeros(self.runs, device=device)
        """How much of the returns' variance the values explained in the last rollout (mean over learning roles)."""

    def _captured_settings(self) -> dict:
        """What a captured update bakes in, by name: each run's config fields (learning rate bounds,
        coefficients, epochs), the minibatch count and the precision."""
        settings = {(f"config field {name}" if self.runs == 1 else f"run {run}'s config field {name}"): value
                    for run, config in enumerate(self.configs) for name, value in config.to_dict().items()}
        return {**settings, "the minibatch count": self.minibatches, "the precision": self.precision}

    def _allocate_rollout(self) -> None:
        r, t, e, spec = self.runs, self.config.rollout_steps, self.config.num_envs, self.env.spec
        d, a = self.inputs[0].input_size, len(spec.action_levels)

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
            observations=zeros(r, t, e, role.count, d, dtype=observed, env_side=True),
            actions=zeros(r, t, e, role.count, a, dtype=torch.int32),
            log_probs=zeros(r, t, e, role.count), values=zeros(r, t, e, role.count),
            rewards=zeros(r, t, e, role.count, env_side=True)) for role in self.learners}
        """Each learning role's rollout, by role name, in the order of ``learners``."""
        self.terminated = zeros(r, t, e, 1, dtype=torch.bool, env_side=True)
        self.truncated = zeros(r, t, e, 1, dtype=torch.bool, env_side=True)
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
        self.env_steps += self.config.rollout_steps * self.config.num_envs

    def learn(self, next_values: list[torch.Tensor]) -> None:
        """``epochs`` passes of clipped PPO over the rollout, in shuffled minibatches, given each
        learning role's value of the observations after it float32[R, E, n]. Nothing here reads
        the device from the host, so that a CUDA graph can capture it whole."""
        c = self.config
        rollouts, terminated, truncated = self._rollout_on_policy_device()
        samples, explained = [], []
        for role, rollout, next_value in zip(self.learners, rollouts, next_values):
            # GAE runs over the steps: [T, R, E, n], each run with its own gamma and lambda.
            advantages, returns = (x.transpose(0, 1) for x in ppo.gae(
                rollout.rewards.transpose(0, 1), rollout.values.transpose(0, 1), terminated.transpose(0, 1),
                truncated.transpose(0, 1), next_value, self.gamma, self.gae_lambda))
            explained.append(ppo.explained_variance(rollout.values.flatten(1), returns.flatten(1)))
            samples.append(self._value_targets(role.name, Samples.of(rollout, advantages, returns)))
        self.explained_variance.copy_(torch.stack(explained).mean(0))
        runs = torch.arange(self.runs, device=self.device)[:, None]
        row = 0
        for _ in range(c.epochs):
            orders = [[torch.randperm(s.num_samples, device=self.device, generator=generator)
                       .tensor_split(self.minibatches) for generator in self.generators] for s in samples]
            self.epoch_kl.zero_()
            for m in range(self.minibatches):
                self._step_on_minibatch([s.pick(runs, torch.stack([order[m] for order in run_orders]))
                                         for s, run_orders in zip(samples, orders)], row)
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

    def _step_on_minibatch(self, minibatches: list[Samples], row: int) -> None:
        """One optimizer step on every run's and learning role's minibatch; its statistics go into
        ``update_stats[:, row]``."""
        with self.autocast():
            outputs = self.model([batch.observations for batch in minibatches], [role.name for role in self.learners])
        loss = torch.zeros(self.runs, device=self.device)
        per_role = []
        for batch, (logits, value) in zip(minibatches, outputs):
            loss, role_stats = self.loss(loss, logits, value, batch)
            per_role.append(role_stats)
        stats = torch.stack(per_role)  # [L, R, STATS]
        self.epoch_kl += stats[:, :, APPROX_KL].T / self.minibatches
        self.optimizer.zero_grad(set_to_none=True)
        # Each run's loss depends on its own parameters only: the sum's gradient is each run's own.
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
        self.nonfinite |= ~torch.isfinite(loss.detach())
        self.update_stats[:, row, 0] = stats[:, :, 0].amax(0)
        self.update_stats[:, row, 1:] = stats[:, :, 1:].mean(0)

    def _clip_gradients(self) -> None:
        """Scales each run's gradients of each group down to at most its max_grad_norm, as
        ``clip_grad_norm_`` would on that run's parameters alone."""
        for group in self.clipped_groups:
            gradients = [parameter.grad for parameter in group if parameter.grad is not None]
            # [R, P], each run's row contiguous: the norm over its parameters sums as it would alone.
            norms = torch.stack([gradient.flatten(1).norm(dim=1) for gradient in gradients], dim=1).norm(dim=1)
            scale = (self.max_grad_norm / (norms + 1e-6)).clamp(max=1.0)
            for gradient in gradients:
                gradient.mul_(scale.view(-1, *(1,) * (gradient.dim() - 1)))

    # ----- reading and saving --------------------------------------------------------
    def read_metrics(self) -> list[dict]:
        """Each run's episode statistics since the last read and the last update's means (one host
        read, and one per run for its episodes)."""
        update = torch.cat([self.update_stats.mean(dim=1), self.explained_variance[:, None],
                            self.nonfinite.float()[:, None], self.learning_rates.values().mean(1, keepdim=True)],
                           dim=1).tolist()
        reports = []
        for stats, (*means, explained, nonfinite, rate) in zip(self.stats, update):
            metrics = {"iteration": self.iteration, "env_steps": self.env_steps * self.world.size,
                       "learning_rate": rate}
            metrics.update(stats.read())
            metrics.update(zip(UPDATE_STATS, means))
            metrics["explained_variance"] = explained
            metrics["diverged"] = nonfinite > 0
            reports.append(metrics)
        return reports

    def run_policies(self, run: int = 0) -> RolePolicies:
        """A copy of run ``run``'s networks as one run's ``RolePolicies``, in eval mode, to play
        (``evaluate.Player``) or save; on the networks' device."""
        role_names = [role.name for role in self.roles]
        policies = RolePolicies.for_config(self.configs[run], self.env.spec, role_names, self.inputs[0].input_size)
        policies.load_state_dict(self.policies.run_state_dict(run))
        return policies.to(self.device).eval()

    def run_state_dict(self, run: int) -> dict:
        """Everything an exact resume of run ``run`` needs, as a checkpoint of it alone; the
        per-rank parts gathered from every rank."""
        env = self.envs[run]
        own = {"env": {name: tensor.cpu() for name, tensor in _env_arrays(env).items()},
               "generator": self.generators[run].get_state(), "stats": self.stats[run].state_dict(),
               "inputs": self.inputs[run].state_dict()}
        return {
            "signature": signature(env), "config": self.configs[run].to_dict(), "world_size": self.world.size,
            "iteration": self.iteration, "env_steps": self.env_steps,
            "learning_rates": self.learning_rates.run_state_dict(run),
            "policies": self.policies.run_state_dict(run), "optimizer": self.optimizer.run_state_dict(run),
            "scaler": None if self.scaler is None else self.scaler.state_dict(),
            "ranks": self.world.gather(own),
        }

    def load_run_state_dict(self, run: int, checkpoint: dict) -> None:
        """Continues run ``run`` from ``run_state_dict()``'s result, written by as many ranks as there are now."""
        if checkpoint["world_size"] != self.world.size:
            raise InvalidValueError(f"checkpoint {checkpoint.get('path')} was written by {checkpoint['world_size']} "
                                    f"process(es); resume it with as many (now {self.world.size})")
        source = str(checkpoint.get("path", "given"))
        if "learning_rates" not in checkpoint:
            raise RunFileError(f"checkpoint {source} was written by an earlier warpsim, before per-role learning "
                               f"rates: evaluate, render or play against it, but train further in a new run")
        _load_into(lambda: self.policies.load_run_state_dict(run, checkpoint["policies"]), "networks", source)
        _load_into(lambda: self.optimizer.load_run_state_dict(run, checkpoint["optimizer"]), "optimizer state",
                   source)
        if isinstance(self.update, CapturedGraph):
            self.update.reset()  # loading may have made the optimizer's state tensors that a capture reads
        scaler = self.scaler
        if scaler is not None and checkpoint.get("scaler") is not None:
            _load_into(lambda: scaler.load_state_dict(checkpoint["scaler"]), "gradient scaler state", source)
        try:
            own = checkpoint["ranks"][self.world.rank]
            for name, tensor in _env_arrays(self.envs[run]).items():
                tensor.copy_(own["env"][name])
            self.generators[run].set_state(own["generator"])
            self.stats[run].load_state_dict(own["stats"])
            self.inputs[run].load_state_dict(own["inputs"])
        except (KeyError, IndexError, TypeError, RuntimeError) as error:
            raise RunFileError(f"checkpoint {source}: its environment state does not fit ({type(error).__name__}: "
                               f"{str(error).splitlines()[0] if str(error) else ''})") from None
        self.iteration = checkpoint["iteration"]
        self.env_steps = checkpoint["env_steps"]
        self.learning_rates.load_run_state_dict(run, checkpoint["learning_rates"])
        if checkpoint["config"]["iterations"] != self.configs[run].iterations:
            self.learning_rates.extend_from(run, self.iteration)


def _env_arrays(env: Environment) -> dict[str, torch.Tensor]:
    """The environments' arrays a checkpoint holds, by name."""
    return {"observations": env.observations, "actions": env.actions, "rewards": env.rewards,
            "done": env.done, **dict(env.state.items())}


def resolve_precision(precision: str, device: torch.device) -> str:
    """``auto`` is bf16 on CUDA and fp32 on the CPU; fp16 needs CUDA."""
    if precision == "auto":
        return "bf16" if device.type == "cuda" else "fp32"
    if precision == "fp16" and device.type != "cuda":
        raise InvalidValueError(f"precision='fp16' needs a CUDA device (the environments run on {device}); "
                         f"use fp32 or bf16")
    return precision
