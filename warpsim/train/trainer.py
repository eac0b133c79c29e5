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
import math
import os
from collections.abc import Callable, Sequence
from typing import NoReturn

import torch
from torch.nn.parallel import DistributedDataParallel
from typing_extensions import deprecated

from warpsim.device import Placement
from warpsim.environment import Environment
from warpsim.errors import InvalidValueError, RunFileError, WarpsimError
from warpsim.graph import CUDA_GRAPH, EAGER
from warpsim.registry import layout, make
from warpsim.removed import removed
from warpsim.roles import roles_of
from warpsim.train import fused_backward, fused_forward, opponents
from warpsim.train.action_heads import CategoricalHeads
from warpsim.train.checkpoint import signature
from warpsim.train.collect import Collector
from warpsim.train.compiled import Compiled, resolve_compile
from warpsim.train.config import TrainConfig
from warpsim.train.distributed import World
from warpsim.train.episodes import EpisodeStats
from warpsim.train.graphs import CapturedGraph, resolve_graphs
from warpsim.train.learner import UPDATE_STATS, Learner
from warpsim.train.placement import RolloutMirror, computes_bfloat16, place_training
from warpsim.train.policy import RolePolicies
from warpsim.train.rollout import RoleRollout
from warpsim.train.run_policies import RunPolicies
from warpsim.train.runs import batch_key
from warpsim.train.stacking import ObservationStack
from warpsim.train.storage import check_training_fits

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
    """Builds a batch's parts once (environments, stacked policies, rollout storage, the play and
    the update), iterates them, and reads and writes each run's state."""

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
        self.generators = [torch.Generator(self.device).manual_seed(run.seed + self.world.rank)
                           for run in self.configs]
        """Each run's generator: its actions, minibatch orders and staggered starts."""
        self.stats = [EpisodeStats(env, self.roles) for env in self.envs]
        self.iteration = 0
        self.env_steps = 0
        """Environment steps each run has trained on (in this process)."""
        self._allocate_rollout()
        self.collector = Collector(self.envs, self.inputs, self.stats, self.policies, self.generators, self.roles,
                                   self.learners, self.random_roles, self.storage, self.terminated, self.truncated,
                                   self.device, self.autocast, self.compiled)
        """The play: rollouts into the storage (collect.py)."""
        self.learner = Learner(self.configs, self.policies, self.model, self.learners, self.storage, self.terminated,
                               self.truncated, self.mirror, self.generators, self.minibatches, self.precision,
                               self.world, self.device, self.autocast, self.compiled)
        """The PPO update on the storage (learner.py)."""
        # The gradient scaler reads its overflow flag on the host at every step: no capture under fp16.
        self.update_launches = CUDA_GRAPH if self.graphs and self.learner.scaler is None else EAGER
        """How the update launches its work: ``"cuda-graph"``, or ``"eager"`` (always under fp16)."""
        self.rollout: Callable[[], list[torch.Tensor]] = (
            CapturedGraph(lambda _: self.collector.collect(), self.generators, self.device) if self.graphs
            else self.collector.collect)
        """Collects one rollout, by replaying its captured graph or eagerly (``Collector.collect``)."""
        self.update: Callable[[list[torch.Tensor]], None] = (
            CapturedGraph(self.learner.learn, self.generators, self.device, settings=self._captured_settings)
            if self.update_launches == CUDA_GRAPH else self.learner.learn)
        """Updates the policies on the last rollout, given its next values: by replaying its captured
        graph or eagerly (``Learner.learn``)."""
        self.collector.stagger_starts(self.config.stagger_steps)

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
        self.compiled = resolve_compile(config.compile, self.device, self.world.size, self.precision, self.hybrid)
        """Whether the policy step, the minibatch step and GAE run fused, compiled (``config.compile``)."""
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
            policies = RolePolicies.for_config(run, self.env.spec, role_names)
            for role, state in frozen.items():
                policies.network(role).load_state_dict(state)
            runs.append(policies)
        self.policies = RunPolicies(runs).to(self.device)
        """Every role's networks, opponents' included, stacked over the runs (``policies.network(role_name)``)."""
        for role in config.opponents:
            self.policies.network(role).requires_grad_(False)
        # The fused path plays every role's networks as one kernel each: what bf16 autocast computes.
        self.policies.fused = self.compiled and self.precision == "bf16" and all(
            self.policies.network(name).fusable() for name in role_names)
        if config.gradient_kernels in ("on", "loss") and not self.policies.fused:
            missing = {"compile='on'": not self.compiled, "precision='bf16'": self.precision != "bf16",
                       f"hidden_size at most {fused_forward.MAX_HIDDEN}": not 2 <= config.hidden_size
                       <= fused_forward.MAX_HIDDEN}
            ways = [way for way, needed in missing.items() if needed]
            raise InvalidValueError(
                f"config field gradient_kernels={config.gradient_kernels!r} needs the fused path under bf16 with "
                f"networks at most {fused_forward.MAX_HIDDEN} wide, and this run resolved to compile={self.compiled}, "
                f"precision="
                f"{self.precision!r}, hidden_size={config.hidden_size}: set {' and '.join(ways)}, or "
                f"gradient_kernels 'auto' or 'off'")
        self.policies.gradient_kernels = self.policies.fused and (
            config.gradient_kernels in ("on", "loss") or config.gradient_kernels == "auto"
            and fused_backward.pay_off(self.device, config.hidden_size, config.hidden_layers))
        self.policies.loss_kernels = config.gradient_kernels == "loss"
        if self.policies.loss_kernels:
            self._check_loss_kernels_take_the_actions()
        for name in role_names:
            self.policies.network(name).joint_first_layers = self.compiled
        self.model: torch.nn.Module = self.policies
        if self.world.size > 1:
            self.model = DistributedDataParallel(self.policies)

    def _check_loss_kernels_take_the_actions(self) -> None:
        """An InvalidValueError unless every learning role acts by categorical components of equal levels, whose
        loss ``gradient_kernels='loss'`` computes in the gradients' kernels."""
        for role in self.learners:
            head = self.policies.heads[role.name]
            if not (isinstance(head, CategoricalHeads) and len(set(head.action_levels)) == 1):
                actions = (f"components of {list(head.action_levels)} levels" if isinstance(head, CategoricalHeads)
                           else "continuous actions")
                raise InvalidValueError(
                    f"config field gradient_kernels='loss' needs discrete actions whose components have equal "
                    f"levels, and role {role.name!r} of {self.config.env} has {actions}: set gradient_kernels 'on'")

    def _captured_settings(self) -> dict:
        """What a captured update bakes in, by name: each run's config fields (learning rate bounds,
        coefficients, epochs), the minibatch count and the precision."""
        settings = {(f"config field {name}" if self.runs == 1 else f"run {run}'s config field {name}"): value
                    for run, config in enumerate(self.configs) for name, value in config.to_dict().items()}
        return {**settings, "the minibatch count": self.minibatches, "the precision": self.precision}

    def _allocate_rollout(self) -> None:
        r, t, e = self.runs, self.config.rollout_steps, self.config.num_envs
        depth, heads = self.config.stack_observations, self.policies.heads

        # The environments' side is pinned when it moves from the CPU to a GPU for the update.
        pin = self.hybrid and self.env_device.type == "cpu" and self.device.type == "cuda"

        def zeros(*shape: int, dtype: torch.dtype = torch.float32, env_side: bool = False) -> torch.Tensor:
            if env_side:
                return torch.zeros(shape, dtype=dtype, device=self.env_device, pin_memory=pin)
            return torch.zeros(shape, dtype=dtype, device=self.device)

        # Under bf16 the networks' first layer rounds its inputs to bfloat16: storing them so loses nothing
        # (storage.observation_bytes counts them so).
        observed = torch.bfloat16 if self.precision == "bf16" else torch.float32

        def stored_width(inputs: int) -> int:
            # On the fused path a stored row carries the kernels' padding (zeros, written once): the forward kernel
            # reads a step's inputs where they are stored, and the update gathers aligned rows, with no padded copy.
            return fused_forward.aligned_size(inputs) if self.policies.fused else inputs

        self.storage = {role.name: RoleRollout(
            observations=zeros(r, t, e, role.count, stored_width(depth * role.observation_size), dtype=observed,
                               env_side=True),
            actions=zeros(r, t, e, role.count, heads[role.name].action_size, dtype=heads[role.name].action_dtype),
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

    def compile_seconds(self) -> float:
        """Seconds the fused path's first calls took, compiling included (0 when eager)."""
        compiled = [self.collector.policy_step, self.collector.record, self.learner.gae, self.learner.fused_step]
        return sum(function.seconds for function in compiled if isinstance(function, Compiled))

    # ----- one iteration ------------------------------------------------------------
    def iterate(self, after_rollout: Callable[[], None] | None = None) -> None:
        """Collects one rollout and updates the policies on it; ``after_rollout`` is called
        in between (the benchmark's mark between the two)."""
        self.learner.learning_rates.start_iteration(self.iteration)
        next_values = self.rollout()
        if after_rollout is not None:
            after_rollout()
        self.update(next_values)
        self.iteration += 1
        self.env_steps += self.config.rollout_steps * self.config.num_envs

    # ----- reading and saving --------------------------------------------------------
    def read_metrics(self) -> list[dict]:
        """Each run's episode statistics since the last read and the last update's means (one host
        read, and one per run for its episodes); with continuous actions, ``log_std``: the mean
        log standard deviation of the learning roles' policies."""
        learner = self.learner
        log_stds = [network.log_std.detach().mean(-1) for network in
                    (self.policies.network(role.name) for role in self.learners) if network.log_std is not None]
        log_std = torch.stack(log_stds).mean(0) if log_stds else torch.full((self.runs,), math.nan,
                                                                            device=self.device)
        update = torch.cat([learner.update_stats.mean(dim=1), learner.explained_variance[:, None],
                            learner.nonfinite.float()[:, None], learner.learning_rates.values().mean(1, keepdim=True),
                            log_std[:, None]], dim=1).tolist()
        reports = []
        for stats, (*means, explained, nonfinite, rate, run_log_std) in zip(self.stats, update):
            metrics = {"iteration": self.iteration, "env_steps": self.env_steps * self.world.size,
                       "learning_rate": rate}
            metrics.update(stats.read())
            metrics.update(zip(UPDATE_STATS, means))
            metrics["explained_variance"] = explained
            metrics["diverged"] = nonfinite > 0
            if log_stds:
                metrics["log_std"] = run_log_std
            reports.append(metrics)
        return reports

    def run_policies(self, run: int = 0) -> RolePolicies:
        """A copy of run ``run``'s networks as one run's ``RolePolicies``, in eval mode, to play
        (``evaluate.Player``) or save; on the networks' device."""
        role_names = [role.name for role in self.roles]
        policies = RolePolicies.for_config(self.configs[run], self.env.spec, role_names)
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
            "policies": self.policies.run_state_dict(run), **self.learner.run_state_dict(run),
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
        learner = self.learner
        _load_into(lambda: learner.optimizer.load_run_state_dict(run, checkpoint["optimizer"]), "optimizer state",
                   source)
        if isinstance(self.update, CapturedGraph):
            self.update.reset()  # loading may have made the optimizer's state tensors that a capture reads
        scaler = learner.scaler
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
        learner.learning_rates.load_run_state_dict(run, checkpoint["learning_rates"])
        if checkpoint["config"]["iterations"] != self.configs[run].iterations:
            learner.learning_rates.extend_from(run, self.iteration)


    @deprecated("removed in 0.2.0: call trainer.run_state_dict(run)", category=None)
    def state_dict(self, *args, **kwargs) -> NoReturn:
        """Removed in 0.2.0 (see ``run_state_dict``)."""
        raise removed("Trainer.state_dict()", "0.2.0", "a trainer holds a batch of runs now: call "
                      "trainer.run_state_dict(run), run 0 for a single run")

    @deprecated("removed in 0.2.0: call trainer.load_run_state_dict(run, checkpoint)", category=None)
    def load_state_dict(self, *args, **kwargs) -> NoReturn:
        """Removed in 0.2.0 (see ``load_run_state_dict``)."""
        raise removed("Trainer.load_state_dict(checkpoint)", "0.2.0", "a trainer holds a batch of runs now: call "
                      "trainer.load_run_state_dict(run, checkpoint), run 0 for a single run")

    @deprecated("removed in 0.2.0: call trainer.collector.collect() or trainer.rollout()", category=None)
    def collect(self, *args, **kwargs) -> NoReturn:
        """Removed in 0.2.0 (see ``Collector.collect``)."""
        raise removed("Trainer.collect()", "0.2.0", "call trainer.collector.collect() (or trainer.rollout(), which "
                      "replays its CUDA graph)")

    @property
    @deprecated("removed in 0.2.0: use trainer.generators[run]", category=None)
    def generator(self) -> NoReturn:
        """Removed in 0.2.0 (see ``generators``)."""
        raise removed("Trainer.generator", "0.2.0", "each run has its own: trainer.generators[run]")


def _env_arrays(env: Environment) -> dict[str, torch.Tensor]:
    """The environments' arrays a checkpoint holds, by name."""
    return {"observations": env.observations, "actions": env.actions, "rewards": env.rewards,
            "done": env.done, **dict(env.state.items())}


def resolve_precision(precision: str, device: torch.device) -> str:
    """``auto`` is bf16 on a GPU that computes it (``placement.computes_bfloat16``), fp32 on older GPUs and the
    CPU; fp16 needs CUDA."""
    if precision == "auto":
        return "bf16" if computes_bfloat16(device) else "fp32"
    if precision == "fp16" and device.type != "cuda":
        raise InvalidValueError(f"precision='fp16' needs a CUDA device (the environments run on {device}); "
                         f"use fp32 or bf16")
    return precision
