"""The sim+policy and train tiers of docs/benchmarks.md, timed through the trainer itself.

* ``sim+policy``: rollouts of T steps: the policies' forward pass and action sampling
  on the device, the actions written into the environment's buffer, the step, and
  the rollout storage (``Collector.collect``).
* ``train``: whole PPO iterations, rollout and update (``Trainer.iterate``), counting
  the environment steps collected per second of wall time, and the milliseconds each
  iteration's rollout and update took apart (``rollout_ms``, ``update_ms``).

A timed repeat is one rollout (or iteration) of ``steps`` steps of every environment;
the networks run in the given precision (``auto``: bf16 on CUDA, fp32 on a CPU).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Any

import torch

from warpsim.bench.runner import (
    DEFAULT_MAX_SECONDS,
    Progress,
    check_graphs,
    fit_to_time,
    make_record,
    spread,
    synchronize,
)
from warpsim.configs import BenchConfig
from warpsim.device import resolve_placement
from warpsim.errors import InvalidValueError
from warpsim.registry import layout, make
from warpsim.train.config import PRECISIONS, TrainConfig
from warpsim.train.placement import resolve_policy_device
from warpsim.train.storage import check_training_fits, fitting_rollout_steps
from warpsim.train.trainer import Trainer, resolve_precision
from warpsim.validation import require_int

POLICY_TIERS = ("sim+policy", "train")
FIXED_UPDATE: dict[str, Any] = dict(lr_schedule="constant", minibatch_size=0)
"""The train tier times the same work every iteration: four minibatches per epoch, at a fixed rate."""


def run_policy_tier(config: BenchConfig, tier: str, backend: str = "auto", precision: str = "auto",
                    steps: int = 32, repeats: int = 5, warmup_steps: int = 1, seed: int = 0,
                    max_seconds: float | None = None, progress: Progress | None = None, graphs: bool = False,
                    hidden_size: int = 64, policy_device: str = "auto", compile: str = TrainConfig.compile,
                    gradient_kernels: str = TrainConfig.gradient_kernels) -> dict:
    """Times ``tier`` of ``config``; returns one result record like ``run_sim``'s.

    ``warmup_steps`` counts untimed rollouts (or iterations) after start-up. With ``graphs``
    each rollout replays one captured CUDA graph (the trainer's ``graphs="on"``).
    ``hidden_size``, ``policy_device``, ``compile`` and ``gradient_kernels`` are the trainer's settings
    of those names (the fused path compiles in the start-up's iteration, before any timing).
    """
    check_graphs(graphs, backend)
    if tier not in POLICY_TIERS:
        raise InvalidValueError(f"tier={tier!r} is not a policy tier; allowed: {', '.join(POLICY_TIERS)}")
    if precision not in PRECISIONS:
        raise InvalidValueError(f"precision={precision!r} is not allowed; choose one of {', '.join(PRECISIONS)}")
    env_id = config.env
    if not isinstance(env_id, str):
        raise InvalidValueError(f"the {tier} tier runs the trainer, which takes a registered environment id; "
                         f"register {env_id.__name__} with warpsim.register first")
    steps, repeats, warmup_steps = (require_int(name, value, 1) for name, value in
                                    (("steps", steps), ("repeats", repeats), ("warmup_steps", warmup_steps)))
    if max_seconds is None:
        max_seconds = DEFAULT_MAX_SECONDS.get(resolve_placement(backend).backend, math.inf)

    requested_steps = steps
    least_envs = _least_envs(config, steps)

    @functools.cache
    def rollout_steps(num_envs: int) -> int:
        return _rollout_that_fits(dataclasses.replace(config, num_envs=num_envs), env_id, backend, precision,
                                  requested_steps, seed, hidden_size, policy_device)

    def trainer_for(num_envs: int) -> Trainer:
        return Trainer(TrainConfig(env=env_id, env_params=dict(config.params), num_envs=num_envs,
                                   backend=backend, precision=precision, rollout_steps=rollout_steps(num_envs),
                                   iterations=1_000_000, seed=seed, **FIXED_UPDATE,
                                   graphs="on" if graphs else "off", hidden_size=hidden_size,
                                   policy_device=policy_device, compile=compile,
                                   gradient_kernels=gradient_kernels))

    run_once = (lambda trainer: trainer.rollout()) if tier == "sim+policy" else Trainer.iterate

    def seconds_per_rollout(num_envs: int) -> float:
        trainer = trainer_for(num_envs)
        run_once(trainer)
        _wait(trainer)
        begin = time.perf_counter()
        run_once(trainer)
        _wait(trainer)
        return time.perf_counter() - begin

    # A repeat is one rollout: the time budget is counted in rollouts, each as long as fits at its E
    # (a rollout halved to fit the requested E is whole again at the smaller E the budget allows).
    num_envs, _, _ = fit_to_time(config.num_envs, seconds_per_rollout, 1, repeats, warmup_steps, max_seconds,
                                 progress, least_envs)
    steps = rollout_steps(num_envs)
    if steps < requested_steps and progress:
        progress(f"a rollout of {requested_steps} steps of {num_envs} environments does not fit in memory; "
                 f"timing rollouts of {steps} steps")
    started = time.perf_counter()
    trainer = trainer_for(num_envs)
    run_once(trainer)
    _wait(trainer)
    startup = time.perf_counter() - started
    if progress and trainer.compiled:
        progress(f"{tier} start-up {startup:.1f} s, of which {trainer.compile_seconds():.1f} s the fused path's "
                 f"first calls (compiling)")
    for _ in range(warmup_steps):  # with graphs, the start-up's rollout was the eager warm-up; this one captures
        run_once(trainer)
    _wait(trainer)
    rates, host_seconds = [], []
    phases = IterationPhases(trainer)
    for repeat in range(repeats):
        begin = time.perf_counter()
        if tier == "train":
            phases.iterate()
        else:
            run_once(trainer)
        host_seconds.append((time.perf_counter() - begin) / steps)
        _wait(trainer)
        rates.append(steps * num_envs / (time.perf_counter() - begin))
        if tier == "train":
            phases.read()
        if progress:
            progress(f"{tier} repeat {repeat + 1}/{repeats}: {rates[-1] * trainer.env.num_agents:.3e} agent-steps/s")
    record = make_record(config, trainer.env, rates, startup, steps, repeats, warmup_steps, max_seconds,
                         tier=tier, precision=trainer.precision, launches=trainer.launches, host_seconds=host_seconds)
    record["networks"] = {"hidden_size": trainer.config.hidden_size, "hidden_layers": trainer.config.hidden_layers,
                          "parameters": sum(p.numel() for p in trainer.policies.parameters())}
    record["policy_device"] = str(trainer.device)
    record["compiled"] = trainer.compiled
    if tier == "train":
        record["update"] = {"epochs": trainer.config.epochs, "minibatches": trainer.minibatches,
                            "shared_trunk": trainer.config.shared_trunk, "launches": trainer.update_launches,
                            "compiled": trainer.compiled, "compile_seconds": trainer.compile_seconds(),
                            "gradient_kernels": trainer.policies.gradient_kernels,
                            "loss_kernels": trainer.policies.loss_kernels}
        record["rollout_ms"] = spread(phases.rollout_ms)
        record["update_ms"] = spread(phases.update_ms)
    return record


class IterationPhases:
    """Times the rollout and the update of each iteration apart, in milliseconds: by CUDA
    events on the networks' GPU (read after the repeat's own wait, so the timing adds no
    synchronisation), by the host clock where they run on a CPU."""

    def __init__(self, trainer: Trainer):
        self._trainer = trainer
        self._on_gpu = trainer.device.type == "cuda"
        self._marks: list = []
        self.rollout_ms: list[float] = []
        self.update_ms: list[float] = []

    def iterate(self) -> None:
        """One iteration of the trainer, marked before, between and after its two phases."""
        self._marks = []
        self._mark()
        self._trainer.iterate(after_rollout=self._mark)
        self._mark()

    def read(self) -> None:
        """Adds the last iteration's times, once the device has finished it."""
        begin, middle, end = self._marks
        if self._on_gpu:
            self.rollout_ms.append(begin.elapsed_time(middle))
            self.update_ms.append(middle.elapsed_time(end))
        else:
            self.rollout_ms.append(1e3 * (middle - begin))
            self.update_ms.append(1e3 * (end - middle))

    def _mark(self) -> None:
        if self._on_gpu:
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self._trainer.device))
            self._marks.append(event)
        else:
            _wait(self._trainer)  # GPU environments under CPU networks: the host clock needs them done
            self._marks.append(time.perf_counter())



def _wait(trainer: Trainer) -> None:
    """Waits for the environments' device and, when they differ, the networks'."""
    synchronize(trainer.env)
    if trainer.hybrid and trainer.device.type == "cuda":
        torch.cuda.synchronize(trainer.device)


def _least_envs(config: BenchConfig, steps: int) -> int:
    """The fewest environments whose rollout of ``steps`` steps holds a sample of every role for each of
    the update's minibatches; refuses a requested E below it, in the bench's own terms."""
    spec = layout(config.env, 1, **config.params)[0]
    fewest, role = min((count, name) for index, name in enumerate(spec.role_names)
                       if (count := spec.agent_roles.count(index)))
    minibatches = TrainConfig.minibatches
    least = -(-minibatches // (steps * fewest))
    if config.num_envs < least:
        raise InvalidValueError(f"a rollout of {steps} steps of {config.num_envs} environments holds "
                                f"{steps * config.num_envs * fewest} samples of role {role!r}, too few for the "
                                f"update's {minibatches} minibatches; give at least {least} environments "
                                f"(--num-envs) or more steps (--steps)")
    return least


def _rollout_that_fits(config: BenchConfig, env_id: str, backend: str, precision: str, steps: int, seed: int,
                       hidden_size: int = 64, policy_device: str = "auto") -> int:
    """``steps``, or the longest shorter rollout (halving) whose training storage fits in memory."""
    probe = make(env_id, 1, backend=backend, checked=False, **config.params)
    wanted = TrainConfig(env=env_id, env_params=dict(config.params), num_envs=config.num_envs, backend=backend,
                         precision=precision, rollout_steps=steps, seed=seed, **FIXED_UPDATE,
                         hidden_size=hidden_size)
    resolved = resolve_precision(precision, resolve_policy_device(policy_device, probe.placement.torch_device))
    fitting = fitting_rollout_steps(wanted, probe.spec, probe.array_bytes(), probe.placement, resolved)
    if fitting == 0:
        check_training_fits(TrainConfig(**{**wanted.to_dict(), "rollout_steps": 1}), probe.spec,
                            probe.array_bytes(), probe.placement, resolved)  # raises DoesNotFitError, naming the sizes
    return fitting
