"""The training run: a Trainer driven through its iterations with a run directory,
progress, periodic checkpoints, resume, and a stop on a non-finite loss."""

from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from warpsim.errors import InvalidValueError
from warpsim.train import checkpoint
from warpsim.train.config import TrainConfig
from warpsim.train.distributed import World
from warpsim.train.loggers import MetricLog, import_wandb, log_to_all, open_logs
from warpsim.train.placement import environment_placement
from warpsim.train.progress import ProgressBar
from warpsim.train.run_dir import RunDirectory
from warpsim.train.trainer import Trainer, TrainingDiverged


def default_run_dir(config: TrainConfig) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{config.env.replace(':', '.')}-{stamp}"  # package.module:Class too


def train(config: TrainConfig | None, run_dir: Path | str | None = None, *, resume: bool = False,
          iterations: int | None = None, world: World | None = None, stop_after: int | None = None,
          progress=sys.stderr, wandb: str | None = None) -> Trainer:
    """Trains to ``config.iterations`` (or ``iterations`` when resuming), writing ``run_dir``.

    With ``resume``, the config comes from ``run_dir`` and training continues from its
    checkpoint exactly where it was. ``stop_after`` ends this call after that many
    iterations (a checkpoint is written then). ``progress`` is a text stream, or None.
    ``wandb`` names a Weights & Biases project that the metrics also go to.
    """
    if wandb is not None:
        import_wandb()  # before anything is made or written
    if resume:
        if run_dir is None:
            raise InvalidValueError("--resume needs the run directory to continue")
        directory = RunDirectory(run_dir, resume=True)
        config = directory.saved_config()
        saved = checkpoint.load(directory.checkpoint_path, needs=checkpoint.RESUME_KEYS)
        if iterations is not None:
            if iterations < saved["iteration"]:
                raise InvalidValueError(
                    f"--iterations {iterations} is below the {saved['iteration']} iterations the run in "
                    f"{directory.path} has done; give {saved['iteration']} or more to continue it (nothing was "
                    f"changed)")
            config = TrainConfig(**{**config.to_dict(), "iterations": iterations})
    elif config is None:
        raise InvalidValueError("give a config, or resume a run directory")
    else:
        directory = RunDirectory(run_dir if run_dir is not None else default_run_dir(config), resume=False)
        saved = None
    world = world or World.from_environment(uses_gpu=environment_placement(config.backend).on_gpu)
    trainer = Trainer(config, world, load_opponents=saved is None)
    if saved is not None:
        checkpoint.check_compatible(saved, trainer.env, directory.checkpoint_path)
        trainer.load_state_dict(saved)
    first_state = None if saved is not None else trainer.state_dict()  # every rank takes part in the gather
    if world.is_writer:
        if first_state is not None:
            # The checkpoint of iteration 0 before config.json: a directory that holds a run can always resume.
            directory.create()
            checkpoint.save(directory.checkpoint_path, first_state)
            directory.write_config(config)
        elif saved is not None:
            directory.keep_metrics_up_to(trainer.iteration)
            if saved["config"]["iterations"] != config.iterations:
                directory.write_config(config)
    logs, log_lines = open_logs(directory.path, config, wandb) if world.is_writer else ([], [])
    bar = ProgressBar(config.iterations, progress, trainer.iteration) if world.is_writer and progress else None
    if bar:
        bar.message(start_line(trainer, directory.path, resumed=saved is not None))
        for line in log_lines:
            bar.message(line)
    if bar and trainer.loss.compiled:
        bar.message(f"compiled the loss in {trainer.loss.compile_seconds:.1f} s, before the first iteration "
                    f"(not counted in steps/s)")
    try:
        _iterate(trainer, directory, logs, bar, stop_after)
    except KeyboardInterrupt:
        if bar:
            bar.message(f"interrupted; the last checkpoint is in {directory.path}: continue with "
                        f"warpsim train --resume --run-dir {directory.path}")
        raise
    finally:
        for log in logs:
            log.close()
    return trainer


def start_line(trainer: Trainer, run_dir: Path, resumed: bool) -> str:
    """What a run is about to do, and where: said before its first iteration."""
    config = trainer.config
    what = f"resuming {config.env} at iteration {trainer.iteration}," if resumed else f"training {config.env}"
    return (f"{what} to iteration {config.iterations} in {run_dir}: environments on the "
            f"{trainer.env.backend} backend ({trainer.env_device}), networks on {trainer.device} in "
            f"{trainer.precision}, {trainer.launches} rollouts of {config.rollout_steps} steps x {config.num_envs} "
            f"environments, {trainer.update_launches} updates of {trainer.minibatches} minibatches x {config.epochs} "
            f"epochs")


def _iterate(trainer: Trainer, directory: RunDirectory, logs: list[MetricLog], bar, stop_after: int | None) -> None:
    config, world = trainer.config, trainer.world
    last = config.iterations if stop_after is None else min(config.iterations, trainer.iteration + stop_after)
    started, steps_at_start = time.perf_counter(), trainer.env_steps
    window_start, window_steps = started, trainer.env_steps
    first = trainer.iteration + 1  # reported too, so progress shows from the start
    while trainer.iteration < last:
        trainer.iterate()
        at_end = trainer.iteration == last
        if trainer.iteration % config.log_every == 0 or at_end or trainer.iteration == first:
            metrics = trainer.read_metrics()
            now = time.perf_counter()
            metrics["steps_per_second"] = (trainer.env_steps - window_steps) * world.size / (now - window_start)
            metrics["elapsed_seconds"] = now - started
            window_start, window_steps = now, trainer.env_steps
            _stop_if_diverged(trainer, directory)
            if world.is_writer:
                directory.log(metrics)
                log_to_all(logs, metrics)
                if bar:
                    bar.update(trainer.iteration, metrics)
        if trainer.iteration % config.checkpoint_every == 0 or at_end:
            _stop_if_diverged(trainer, directory)
            state = trainer.state_dict()
            if world.is_writer:
                checkpoint.save(directory.checkpoint_path, state)
    if bar and trainer.env_steps == steps_at_start:
        bar.message(f"nothing to do: the run in {directory.path} has done its {trainer.iteration} iterations; "
                    f"give --iterations above {trainer.iteration} to extend it")
    elif bar:
        rate = (trainer.env_steps - steps_at_start) * world.size / (time.perf_counter() - started)
        bar.message(f"done: iteration {trainer.iteration}, {rate:,.0f} env-steps/s overall; "
                    f"run directory {directory.path}")


def _stop_if_diverged(trainer: Trainer, directory: RunDirectory) -> None:
    flag = trainer.nonfinite.to(torch.int32)
    if trainer.world.size > 1:
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    if int(flag):
        kept = (f"the last good checkpoint, {directory.checkpoint_path}, is kept"
                if directory.checkpoint_path.exists() else "no checkpoint had been written yet")
        raise TrainingDiverged(
            f"the loss became NaN or infinite by iteration {trainer.iteration}; training stopped and "
            f"{kept}. A lower learning_rate or max_grad_norm usually helps: start a new run with them "
            f"(--resume keeps the run's saved config)")
