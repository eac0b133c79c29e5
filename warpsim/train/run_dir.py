"""A run directory: the resolved config, metrics as JSON lines (and TensorBoard), checkpoints.

    runs/<name>/config.json      the full resolved TrainConfig
    runs/<name>/metrics.jsonl    one JSON object per metrics read
    runs/<name>/checkpoint.pt    the latest checkpoint (replaced atomically)
    runs/<name>/tensorboard/     event files, when the tensorboard package is installed (loggers.py)
    runs/<name>/wandb-run-id     the Weights & Biases run it logs to, with --wandb

A run starts by writing its checkpoint of iteration 0 and then ``config.json``: a
directory with a ``config.json`` always has a checkpoint to resume from, and one
without it holds no run (a new run may take it over).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from warpsim.errors import RunFileError, WarpsimError
from warpsim.files import describe_os_error, make_directory, read_json, replace_atomically, usable_directory
from warpsim.train.checkpoint import FILE_NAME
from warpsim.train.config import TrainConfig, build_saved_config

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
EXPERIMENT_FILE = "experiment.json"
"""What marks an experiment's directory (experiment.py), which holds runs but is none."""


class RunDirectory:
    """Checks a run directory before anything is written, then writes into it."""

    def __init__(self, path: Path | str, *, resume: bool):
        self.path = usable_directory(path, "run directory")
        self.config_path = self.path / CONFIG_FILE
        self.checkpoint_path = self.path / FILE_NAME
        self.metrics_path = self.path / METRICS_FILE
        if resume and not self.config_path.is_file():
            raise RunFileError(f"--resume: {self.path} holds no {CONFIG_FILE}, so no run to continue; "
                               f"start one there without --resume")
        if resume and not self.checkpoint_path.is_file():
            raise RunFileError(f"--resume: {self.path} holds no {FILE_NAME} to continue from")
        if not resume and self.config_path.exists():
            raise RunFileError(f"{self.path} already holds a run; continue it with --resume, or "
                             f"choose another run directory (nothing was written)")
        if (self.path / EXPERIMENT_FILE).exists():
            raise RunFileError(f"{self.path} holds an experiment, not a run: give one of its run directories, "
                               f"or continue the experiment with --resume (nothing was written)")

    def saved_config(self) -> TrainConfig:
        """The run's config.json; a RunFileError naming the file when it cannot be used."""
        settings = read_json(self.config_path, "a run's config")
        if not isinstance(settings, dict):
            raise RunFileError(f"{self.config_path} must hold a JSON object of settings, "
                               f"not {type(settings).__name__}")
        try:
            return build_saved_config(settings)
        except WarpsimError as error:
            raise RunFileError(f"{self.config_path}: {error}") from None

    def create(self) -> None:
        """Creates the directory, and clears metrics left by a run that never wrote its config."""
        make_directory(self.path, "run directory")
        if self.metrics_path.exists():
            replace_atomically(self.metrics_path, b"", "metrics file")

    def write_config(self, config: TrainConfig) -> None:
        """Writes the resolved config (atomically): from then on the directory holds a run."""
        text = json.dumps(config.to_dict(), indent=2) + "\n"
        replace_atomically(self.config_path, text.encode(), "config")

    def keep_metrics_up_to(self, iteration: int) -> None:
        """On resume: drops a trailing partial line and the records past ``iteration`` (the
        checkpoint's), which the resumed run writes again."""
        if not self.metrics_path.exists():
            return
        try:
            lines = self.metrics_path.read_bytes().split(b"\n")
        except OSError as error:
            raise RunFileError(f"cannot read {self.metrics_path}: {describe_os_error(error)}") from None
        kept = []
        for line in lines[:-1]:  # what follows the last newline is a partial record, or nothing
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a record cut by a crash in an older version; never written whole
            if isinstance(record, dict) and isinstance(record.get("iteration"), int) \
                    and record["iteration"] <= iteration:
                kept.append(line + b"\n")
        if len(kept) != len(lines) - 1 or lines[-1]:
            replace_atomically(self.metrics_path, b"".join(kept), "metrics file")

    def log(self, metrics: dict) -> None:
        """Appends one metrics record whole, or not at all (NaN, from no finished episode, is written as null)."""
        clean = {key: (None if isinstance(value, float) and math.isnan(value) else value)
                 for key, value in metrics.items()}
        append_line(self.metrics_path, json.dumps(clean))


def made_from(source: Path | str) -> tuple[Path, ...]:
    """What a command reading ``source`` (a run directory or a checkpoint file) must not write into:
    the run directory, or the checkpoint and the run directory that holds it."""
    source = Path(source)
    if source.is_dir():
        return (source,)
    if (source.parent / CONFIG_FILE).is_file() or (source.parent / METRICS_FILE).is_file():
        return source, source.parent
    return (source,)


def append_line(path: Path, line: str) -> None:
    """Appends ``line`` and a newline in one write; a failed or short write is cut back off,
    so the file only ever holds whole lines. Raises a RunFileError naming the path."""
    data = (line + "\n").encode()
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as error:
        raise RunFileError(f"cannot append to {path}: {describe_os_error(error)}") from None
    try:
        size = os.fstat(descriptor).st_size
        try:
            written = os.write(descriptor, data)
            if written != len(data):
                raise OSError(28, f"only {written} of {len(data)} bytes were written")
        except OSError as error:
            try:
                os.ftruncate(descriptor, size)
            except OSError:
                pass  # the next resume drops the partial line instead
            raise RunFileError(f"cannot append to {path}: {describe_os_error(error)}; the records before "
                               f"it are intact") from None
    finally:
        os.close(descriptor)
