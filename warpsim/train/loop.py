"""Training runs driven through their iterations: a single run in its run directory, or an
experiment's runs (experiment.py) in batches, each with progress, periodic checkpoints,
resume, and a stop on a non-finite loss.

Ctrl-C (SIGINT) or SIGTERM lets the iteration in flight finish, writes a checkpoint of every
run and says which iteration ``--resume`` continues from; a second one stops at once.

A single run that diverges stops with TrainingDiverged. In an experiment the run that
diverges is stopped and marked so in experiment.json, and the others go on.
"""

from __future__ import annotations

import datetime
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist

from warpsim.errors import InvalidValueError
from warpsim.registry import layout
from warpsim.train import checkpoint
from warpsim.train.config import TrainConfig
from warpsim.train.distributed import World
from warpsim.train.experiment import (
    ExperimentDirectory,
    PlannedRun,
    check_seeds,
    check_sweep,
    plan_runs,
    setting_label,
)
from warpsim.train.interrupts import StopRequests, TrainingInterrupted
from warpsim.train.loggers import MetricLog, import_tensorboard, import_wandb, log_to_all, open_logs
from warpsim.train.placement import describe_gpu, environment_placement
from warpsim.train.progress import ProgressBar
from warpsim.train.run_dir import CONFIG_FILE, RunDirectory
from warpsim.train.runs import batch_key
from warpsim.train.trainer import Trainer, TrainingDiverged


def default_run_dir(config: TrainConfig) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{config.env.replace(':', '.')}-{stamp}"  # package.module:Class too


def train(config: TrainConfig | None, run_dir: Path | str | None = None, *, resume: bool = False,
          iterations: int | None = None, world: World | None = None, stop_after: int | None = None,
          progress=sys.stderr, wandb: str | None = None, tensorboard: bool | None = None) -> Trainer:
    """Trains to ``config.iterations`` (or ``iterations`` when resuming), writing ``run_dir``.

    With ``resume``, the config comes from ``run_dir`` and training continues from its
    checkpoint exactly where it was. ``stop_after`` ends this call after that many
    iterations (a checkpoint is written then). ``progress`` is a text stream, or None.
    ``wandb`` names a Weights & Biases project that the metrics also go to; ``tensorboard``
    (``loggers.open_logs``) turns TensorBoard on, off, or (None) on where it is installed.
    """
    _check_loggers(wandb, tensorboard)
    if resume:
        if run_dir is None:
            raise InvalidValueError("--resume needs the run directory to continue")
        directory = RunDirectory(run_dir, resume=True)
        config = directory.saved_config()
        saved = checkpoint.load(directory.checkpoint_path, needs=checkpoint.RESUME_KEYS)
        config = _with_iterations(config, iterations, saved["iteration"], directory.path)
    elif config is None:
        raise InvalidValueError("give a config, or resume a run directory")
    else:
        directory = RunDirectory(run_dir if run_dir is not None else default_run_dir(config), resume=False)
        saved = None
    world = world or World.from_environment(uses_gpu=environment_placement(config.backend).on_gpu)
    trainer = Trainer(config, world, load_opponents=saved is None)
    bar = ProgressBar(config.iterations, progress) \
        if world.is_writer and progress else None

    def stop(run: int) -> None:
        kept = (f"the last good checkpoint, {directory.checkpoint_path}, is kept"
                if directory.checkpoint_path.exists() else "no checkpoint had been written yet")
        raise TrainingDiverged(
            f"the loss became NaN or infinite by iteration {trainer.iteration}; training stopped and "
            f"{kept}. A lower learning_rate or max_grad_norm usually helps: start a new run with them "
            f"(--resume keeps the run's saved config)")

    _train_batch(trainer, [directory], [saved], bar, stop_after, stop, wandb, tensorboard)
    return trainer


def train_experiment(config: TrainConfig | None, directory: Path | str, *, seeds: tuple[int, ...] = (0,),
                     sweep: dict | None = None, resume: bool = False, iterations: int | None = None,
                     stop_after: int | None = None, progress=sys.stderr, wandb: str | None = None,
                     tensorboard: bool | None = None) -> ExperimentDirectory:
    """Trains ``config`` over ``seeds`` crossed with ``sweep`` (values by setting name) into the
    experiment directory ``directory``, the runs that share their shapes in one batch
    (``runs.batch_key``), batch after batch. With ``resume``, the plan comes from
    ``directory`` and every unfinished run continues from its checkpoint. ``wandb`` and
    ``tensorboard`` as ``train``'s, for every run: one W&B run each, grouped by the experiment's name."""
    _check_loggers(wandb, tensorboard)
    if resume:
        experiment = ExperimentDirectory(directory, resume=True)
        planned = experiment.planned_runs()
        world = _one_process(planned[0].config.backend)
    elif config is None:
        raise InvalidValueError("give a config, or resume an experiment directory")
    else:
        seeds = check_seeds(seeds)
        sweep = check_sweep({} if sweep is None else sweep, config.env, "sweep")
        planned = plan_runs(config, seeds, sweep)
        for env_params in {repr(run.config.env_params): run.config.env_params for run in planned}.values():
            layout(config.env, 1, **env_params)  # every environment's parameters, before writing
        experiment = ExperimentDirectory(directory, resume=False)
        world = _one_process(config.backend)
        experiment.create(config, seeds, sweep, planned)
    diverged = experiment.diverged()
    pending: dict[tuple, list[tuple[PlannedRun, RunDirectory, dict | None]]] = {}
    for run in planned:
        if run.name in diverged:
            continue
        path = experiment.path / run.name
        started = RunDirectory(path, resume=True) if (path / CONFIG_FILE).is_file() else None
        saved = checkpoint.load(started.checkpoint_path, needs=checkpoint.RESUME_KEYS) if started else None
        done = saved["iteration"] if saved else 0
        config_of_run = _with_iterations(run.config, iterations, done, path) if resume else run.config
        if done >= config_of_run.iterations:
            continue
        run = PlannedRun(run.name, run.setting, config_of_run)
        # Runs that were killed between two of their batch's checkpoints continue in batches by iteration.
        key = (batch_key(run.config), done)
        pending.setdefault(key, []).append((run, started or RunDirectory(path, resume=False, taken_over=True), saved))
    say = progress.write if progress else (lambda text: None)
    if not pending:
        say(f"nothing to do: every run of {experiment.path} is done or diverged\n")
    elif len(pending) > 1:
        say(f"{sum(map(len, pending.values()))} runs in {len(pending)} batches, one after another (runs that differ "
            f"in a shape, or stand at different iterations after a stop, cannot share one)\n")
    for number, ((_, done), batch) in enumerate(pending.items(), 1):
        runs = [run for run, _, _ in batch]
        if len(pending) > 1:
            start = f", from iteration {done}" if done else ""
            say(f"batch {number}/{len(pending)}: {len(runs)} run(s), {_batch_label(runs)}{start}\n")
        saved_states = [saved for _, _, saved in batch]
        # Frozen opponents are loaded from their runs for the runs that start here; the others have them saved.
        trainer = Trainer([run.config for run in runs], world,
                          load_opponents=any(state is None for state in saved_states))
        bar = ProgressBar(runs[0].config.iterations, progress) if progress else None

        def stop(index: int, trainer: Trainer = trainer, runs: list[PlannedRun] = runs,
                 bar: ProgressBar | None = bar) -> None:
            experiment.mark_diverged(runs[index].name, trainer.iteration)
            if bar:
                bar.message(f"run {runs[index].name} diverged (its loss became NaN or infinite by iteration "
                            f"{trainer.iteration}): it is stopped, its last good checkpoint kept, and the others go on")

        _train_batch(trainer, [directory for _, directory, _ in batch], saved_states, bar, stop_after, stop, wandb,
                     tensorboard, group=experiment.path.resolve().name)
    return experiment


def _check_loggers(wandb: str | None, tensorboard: bool | None) -> None:
    """The loggers asked for can be written to; checked before anything is made or written."""
    if wandb is not None:
        import_wandb()
    if tensorboard:
        import_tensorboard()


def _one_process(backend: str) -> World:
    """This process's world; an experiment under torchrun is refused before anything is written."""
    world = World.from_environment(uses_gpu=environment_placement(backend).on_gpu)
    if world.size > 1:
        raise InvalidValueError(f"an experiment under torchrun ({world.size} processes) is not supported yet; "
                                f"train it in one process (its runs share the device), or each run under torchrun")
    return world


def _batch_label(runs: list[PlannedRun]) -> str:
    """What a batch holds: its one setting, or how many settings."""
    settings = {setting_label(run.setting) for run in runs}
    return f"{len(settings)} setting(s)" if len(settings) > 1 else next(iter(settings))


def _with_iterations(config: TrainConfig, iterations: int | None, done: int, path: Path) -> TrainConfig:
    """``config`` continued to ``iterations`` (its own when None); never below what the run has done."""
    if iterations is None:
        return config
    if iterations < done:
        raise InvalidValueError(
            f"--iterations {iterations} is below the {done} iterations the run in {path} has done; give {done} or "
            f"more to continue it (nothing was changed)")
    return TrainConfig(**{**config.to_dict(), "iterations": iterations})


def _train_batch(trainer: Trainer, directories: list[RunDirectory], saved: list[dict | None], bar,
                 stop_after: int | None, on_diverged: Callable[[int], None], wandb: str | None = None,
                 tensorboard: bool | None = None, group: str | None = None) -> None:
    """Starts or resumes each run of ``trainer`` in its directory, then iterates them together; its
    W&B runs are grouped by ``group`` (an experiment's name)."""
    world = trainer.world
    for run, (directory, state) in enumerate(zip(directories, saved)):
        if state is not None:
            checkpoint.check_compatible(state, trainer.envs[run], directory.checkpoint_path)
            trainer.load_run_state_dict(run, state)
    first_states = [trainer.run_state_dict(run) if state is None else None for run, state in enumerate(saved)]
    if world.is_writer:
        for run, (directory, state, first) in enumerate(zip(directories, saved, first_states)):
            if first is not None:
                # The checkpoint of iteration 0 before config.json: a directory that holds a run can always resume.
                directory.create()
                checkpoint.save(directory.checkpoint_path, first)
                directory.write_config(trainer.configs[run])
            elif state is not None:
                directory.keep_metrics_up_to(trainer.iteration)
                if state["config"]["iterations"] != trainer.configs[run].iterations:
                    directory.write_config(trainer.configs[run])
    opened = [open_logs(directory.path, config, wandb, tensorboard, group) if world.is_writer else ([], [])
              for directory, config in zip(directories, trainer.configs)]
    logs = [run_logs for run_logs, _ in opened]
    if bar:
        bar.message(start_line(trainer, directories, resumed=saved[0] is not None))
        for line in opened[0][1]:  # the first run's; the others' say the same of their own folders
            bar.message(line if len(directories) == 1 else line.replace(str(directories[0].path), "each run's folder"))
    where = directories[0].path if len(directories) == 1 else directories[0].path.parent
    announce = ("finishing the iteration in flight, then writing a checkpoint of every run (press Ctrl-C again "
                "to stop at once)") if bar and world.is_writer else None
    say = bar.message if bar else (lambda line: print(line, file=sys.stderr, flush=True))
    saved_at = [trainer.iteration] * trainer.runs
    """The iteration of each run's last checkpoint."""
    try:
        with StopRequests(announce) as stops:
            _iterate(trainer, directories, logs, bar, stop_after, on_diverged, stops, saved_at)
    except TrainingInterrupted as interrupted:
        if world.is_writer:
            say(str(interrupted))
        raise
    except KeyboardInterrupt:
        if world.is_writer:
            low, high = min(saved_at), max(saved_at)
            say(f"stopped at once: warpsim train --resume --run-dir {where} continues from the last checkpoint"
                f"{'s' if trainer.runs > 1 else ''}, iteration {low if low == high else f'{low} to {high}'}")
        raise
    finally:
        for run_logs in logs:
            for log in run_logs:
                log.close()


def start_line(trainer: Trainer, directories: list[RunDirectory], resumed: bool) -> str:
    """What a batch of runs is about to do, and where: said before its first iteration."""
    config = trainer.config
    what = f"resuming {config.env} at iteration {trainer.iteration}," if resumed else f"training {config.env}"
    where = (directories[0].path if len(directories) == 1
             else f"{len(directories)} runs batched together in {directories[0].path.parent}")
    networks = describe_gpu(trainer.device) if trainer.device.type == "cuda" else trainer.device
    return (f"{what} to iteration {config.iterations} in {where}: environments on the "
            f"{trainer.env.backend} backend ({trainer.env_device}), networks on {networks} in "
            f"{trainer.precision}, {trainer.launches} rollouts of {config.rollout_steps} steps x {config.num_envs} "
            f"environments, {trainer.update_launches} updates of {trainer.minibatches} minibatches x {config.epochs} "
            f"epoch{'s' if config.epochs != 1 else ''}, "
            f"{_fusion(trainer)}")


def _fusion(trainer: Trainer) -> str:
    """Whether the trainer's work is fused, and its update's gradients kernels (as ``gradient_kernels='auto'``
    resolved)."""
    if not trainer.compiled:
        return "not fused"
    kernels = (", the update's loss and gradients as kernels" if trainer.policies.loss_kernels
               else ", the update's gradients as kernels" if trainer.policies.gradient_kernels else "")
    return f"fused{kernels} (compiled at the first iteration)"


def _iterate(trainer: Trainer, directories: list[RunDirectory], logs: list[list[MetricLog]], bar,
             stop_after: int | None, on_diverged: Callable[[int], None], stops: StopRequests,
             saved_at: list[int]) -> None:
    config, world = trainer.config, trainer.world
    last = config.iterations if stop_after is None else min(config.iterations, trainer.iteration + stop_after)
    started, steps_at_start = time.perf_counter(), trainer.env_steps
    window_start, window_steps = started, trainer.env_steps
    active = list(range(trainer.runs))
    """The runs still training: a run that diverged is stopped (``on_diverged``), the others go on."""

    def stop_diverged() -> None:
        for run in _diverged_runs(trainer):
            if run in active:
                on_diverged(run)
                active.remove(run)

    while trainer.iteration < last and active:
        trainer.iterate()
        at_end = trainer.iteration == last
        # Under torchrun every process stops after the same iteration, whichever got the signal.
        stopping = not at_end and world.any(stops.signal_number is not None, trainer.device)
        # Iteration 1 is read too, so that progress shows from the start; a resumed run reads where an
        # uninterrupted one would (each read takes the episodes since the last), so its records are the same.
        if trainer.iteration % config.log_every == 0 or at_end or trainer.iteration == 1:
            reports = trainer.read_metrics()
            now = time.perf_counter()
            for metrics in reports:
                metrics["steps_per_second"] = (trainer.env_steps - window_steps) * world.size / (now - window_start)
                metrics["elapsed_seconds"] = now - started
            window_start, window_steps = now, trainer.env_steps
            stop_diverged()
            if world.is_writer:
                for run in active:
                    directories[run].log(reports[run])
                    log_to_all(logs[run], reports[run])
                if bar and active:
                    bar.update(trainer.iteration, [reports[run] for run in active])
        if trainer.iteration % config.checkpoint_every == 0 or at_end or stopping:
            stop_diverged()
            states = [(run, trainer.run_state_dict(run)) for run in active]
            if world.is_writer:
                for run, state in states:
                    checkpoint.save(directories[run].checkpoint_path, state)
                    saved_at[run] = trainer.iteration
        if stopping and active:
            raise TrainingInterrupted(_interrupted_line(stops, trainer, directories), stops.signal_number or 0)
    where = directories[0].path if len(directories) == 1 else directories[0].path.parent
    if bar and trainer.env_steps == steps_at_start:
        bar.message(f"nothing to do: the run in {where} has done its {trainer.iteration} iterations; "
                    f"give --iterations above {trainer.iteration} to extend it")
    elif bar:
        rate = (trainer.env_steps - steps_at_start) * world.size * trainer.runs / (time.perf_counter() - started)
        runs = "" if trainer.runs == 1 else f" over {trainer.runs} runs"
        bar.message(f"done: iteration {trainer.iteration}, {rate:,.0f} env-steps/s overall{runs}")


def _interrupted_line(stops: StopRequests, trainer: Trainer, directories: list[RunDirectory]) -> str:
    """What an interrupted batch says: its signal, what was saved and where training continues."""
    name = signal.Signals(stops.signal_number).name if stops.signal_number else "a stop request"
    if len(directories) == 1:
        return (f"interrupted by {name} after iteration {trainer.iteration}; its checkpoint is written: "
                f"warpsim train --resume --run-dir {directories[0].path} continues from iteration {trainer.iteration}")
    experiment = directories[0].path.parent
    return (f"interrupted by {name} after iteration {trainer.iteration}; a checkpoint of each of the batch's "
            f"{len(directories)} runs is written: warpsim train --resume --run-dir {experiment} continues them from "
            f"iteration {trainer.iteration}, and every other run from where it stopped")


def _diverged_runs(trainer: Trainer) -> list[int]:
    """The runs whose loss has been NaN or infinite (on any process)."""
    flags = trainer.learner.nonfinite.to(torch.int32)
    if trainer.world.size > 1:
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
    return [run for run, flag in enumerate(flags.tolist()) if flag]
