"""A run directory: the resolved config, metrics as JSON lines (and TensorBoard), checkpoints.

    runs/<name>/config.json      the full resolved TrainConfig
    runs/<name>/metrics.jsonl    one JSON object per metrics read
    runs/<name>/checkpoint.pt    the latest checkpoint (replaced atomically)
    runs/<name>/tensorboard/     event files, when the tensorboard package is installed
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from warpsim.errors import RunFileError
from warpsim.train.checkpoint import FILE_NAME
from warpsim.train.config import TrainConfig, build_config

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"


class RunDirectory:
    """Checks a run directory before anything is written, then writes into it."""

    def __init__(self, path: Path | str, *, resume: bool):
        self.path = Path(path)
        self.config_path = self.path / CONFIG_FILE
        self.checkpoint_path = self.path / FILE_NAME
        self.metrics_path = self.path / METRICS_FILE
        if resume and not self.checkpoint_path.is_file():
            raise RunFileError(f"--resume: {self.path} holds no {FILE_NAME} to continue from")
        if not resume and self.config_path.exists():
            raise RunFileError(f"{self.path} already holds a run; continue it with --resume, or "
                             f"choose another run directory (nothing was written)")
        self._tensorboard: SummaryWriter | None = None

    def saved_config(self) -> TrainConfig:
        return build_config(json.loads(self.config_path.read_text()))

    def start(self, config: TrainConfig) -> None:
        """Creates the directory and writes the resolved config (atomically)."""
        self.path.mkdir(parents=True, exist_ok=True)
        partial = self.config_path.with_name(CONFIG_FILE + ".partial")
        partial.write_text(json.dumps(config.to_dict(), indent=2) + "\n")
        os.replace(partial, self.config_path)
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # TensorBoard is optional; metrics.jsonl has everything.
            return
        self._tensorboard = SummaryWriter(str(self.path / "tensorboard"))

    def log(self, metrics: dict) -> None:
        """Appends one metrics record (NaN, from no finished episode, is written as null)."""
        clean = {key: (None if isinstance(value, float) and math.isnan(value) else value)
                 for key, value in metrics.items()}
        with self.metrics_path.open("a") as stream:
            stream.write(json.dumps(clean) + "\n")
        if self._tensorboard is not None:
            for key, value in clean.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "iteration":
                    self._tensorboard.add_scalar(key, value, metrics["env_steps"])
            self._tensorboard.flush()

    def close(self) -> None:
        if self._tensorboard is not None:
            self._tensorboard.close()
