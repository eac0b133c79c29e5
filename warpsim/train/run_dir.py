"""A run directory: the resolved config, metrics as JSON lines (and TensorBoard), checkpoints.

    runs/<name>/config.json      the full resolved TrainConfig
    runs/<name>/metrics.jsonl    one JSON object per metrics read
    runs/<name>/checkpoint.pt    the latest checkpoint (replaced atomically)
    runs/<name>/tensorboard/     event files, when TensorBoard logs (loggers.py)
    runs/<name>/wandb-run-id     the Weights & Biases run it logs to, with --wandb

A run starts by writing its checkpoint of iteration 0 and then ``config.json``: a
directory with a ``config.json`` always has a checkpoint to resume from. A new run starts
only in a new or empty directory (an experiment's own run folders aside), and no output of
any command replaces one of these files (``output_file``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from warpsim import files
from warpsim.errors import RunFileError, WarpsimError
from warpsim.files import describe_os_error, make_directory, read_json, replace_atomically, usable_directory
from warpsim.train.checkpoint import FILE_NAME
from warpsim.train.config import TrainConfig, build_saved_config
from warpsim.train.loggers import TENSORBOARD_FOLDER, WANDB_FOLDER, WANDB_ID_FILE

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
EXPERIMENT_FILE = "experiment.json"
"""What marks an experiment's directory (experiment.py), which holds runs but is none."""
OWN_FILES = {CONFIG_FILE: "config", METRICS_FILE: "metrics", FILE_NAME: "checkpoint",
             EXPERIMENT_FILE: "plan", WANDB_ID_FILE: "W&B run id"}
"""The files warpsim writes into a run's or an experiment's directory, by name: what each is."""
OWN_FOLDERS = {TENSORBOARD_FOLDER: "TensorBoard log", WANDB_FOLDER: "W&B log"}
"""The folders warpsim's loggers write into a run's directory, by name."""


class RunDirectory:
    """Checks a run directory before anything is written, then writes into it."""

    def __init__(self, path: Path | str, *, resume: bool, taken_over: bool = False):
        """``taken_over``: a new run may start in a non-empty directory (an experiment's run that was
        stopped before its config was written); otherwise only in an empty or new one."""
        self.path = usable_directory(path, "run directory")
        self.config_path = self.path / CONFIG_FILE
        self.checkpoint_path = self.path / FILE_NAME
        self.metrics_path = self.path / METRICS_FILE
        if resume and not self.config_path.is_file():
            raise RunFileError(f"--resume: {self.path} holds no {CONFIG_FILE}, so no run to continue; "
                               f"start one there without --resume")
        if resume and not self.checkpoint_path.is_file():
            raise RunFileError(f"--resume: {self.path} holds no {FILE_NAME} to continue from")
        if (self.path / EXPERIMENT_FILE).exists():
            raise RunFileError(f"{self.path} holds an experiment, not a run: give one of its run directories, "
                               f"or continue the experiment with --resume (nothing was written)")
        if not resume and self.config_path.exists():
            raise RunFileError(f"{self.path} already holds a run; continue it with --resume, or "
                             f"choose another run directory (nothing was written)")
        if not resume and not taken_over:
            refuse_foreign(self.path, "run directory")

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


def refuse_foreign(path: Path, what: str) -> None:
    """A RunFileError when ``path`` is a directory that holds anything but the partial file of a
    write that was cut off (``files.replace_atomically``): a new run or experiment never takes over
    files that are not its own."""
    cut_off = {f"{name}.partial" for name in OWN_FILES}
    try:
        entries = sorted(entry.name for entry in path.iterdir() if entry.name not in cut_off) if path.is_dir() else []
    except OSError as error:
        raise RunFileError(f"cannot read {what} {path}: {describe_os_error(error)}") from None
    if entries:
        shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
        raise RunFileError(f"{what} {path} already holds files ({shown}) but no warpsim run or experiment; "
                           f"give a new or empty directory (nothing was written)")


def output_file(path: Path | str, what: str, suffix: str) -> Path:
    """``files.output_file``'s checks, and one more: the file is none that a run or an experiment is
    made of (``owner_of``), wherever it lies. Other files, an earlier output included, may be replaced."""
    path = files.output_file(path, what, suffix)
    owner = owner_of(path)
    if owner is not None:
        instead = path.with_name(f"{path.stem}-{what.split()[0]}{suffix}")
        raise RunFileError(f"{what} {path} is {owner}, which warpsim never replaces; write to another file, "
                           f"e.g. {instead}")
    return path


def owner_of(path: Path) -> str | None:
    """What ``path`` is to a run or an experiment (``the config of the run in runs/a``) when warpsim
    wrote it as part of one; None for any other file."""
    path = path.resolve()
    if path.name in OWN_FILES and _holds_run_files(path.parent):
        return f"the {OWN_FILES[path.name]} of the {_kind(path.parent)} in {path.parent}"
    for folder in path.parents:
        if folder.name in OWN_FOLDERS and _holds_run_files(folder.parent):
            return f"inside the {OWN_FOLDERS[folder.name]} of the run in {folder.parent}"
    return None


def _holds_run_files(directory: Path) -> bool:
    return any((directory / name).is_file() for name in (CONFIG_FILE, FILE_NAME, METRICS_FILE, EXPERIMENT_FILE))


def _kind(directory: Path) -> str:
    return "experiment" if (directory / EXPERIMENT_FILE).is_file() else "run"


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
