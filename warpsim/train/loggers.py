"""Where a run's metrics go besides its metrics.jsonl: TensorBoard (``--tensorboard``, or by
default when it is installed), and Weights & Biases when asked (``--wandb PROJECT``; an
experiment's runs are one W&B run each, grouped by the experiment).

Each log receives every metrics record as it is written, numbers only, at the run's env_steps
(``log_to_all``).
"""

from __future__ import annotations

import math
import secrets
from pathlib import Path
from typing import Protocol

from warpsim.errors import UnavailableError
from warpsim.extras import install_hint
from warpsim.files import replace_atomically
from warpsim.train.config import TrainConfig

TENSORBOARD_FOLDER = "tensorboard"
WANDB_FOLDER = "wandb"
"""Where the wandb package keeps its files inside a run directory."""
WANDB_ID_FILE = "wandb-run-id"
"""The W&B run a run directory logs to: a resumed run continues the same W&B run."""


class MetricLog(Protocol):
    def log(self, numbers: dict, step: int) -> None: ...

    def close(self) -> None: ...


class TensorBoardLog:
    def __init__(self, folder: Path):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(folder))

    def log(self, numbers: dict, step: int) -> None:
        for key, value in numbers.items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbLog:
    """One W&B run per run directory, named after it, its config the run's config (the keys W&B
    filters on: env, seed, learning_rate, ... and a sweep's values with them) and its group the
    experiment it belongs to (``group``), or the environment."""

    def __init__(self, project: str, run_dir: Path, config: TrainConfig, group: str | None = None):
        wandb = import_wandb()
        id_file = run_dir / WANDB_ID_FILE
        if id_file.is_file():
            run_id = id_file.read_text().strip()
        else:
            run_id = secrets.token_hex(4)  # W&B ids are short strings of lowercase letters and digits
            replace_atomically(id_file, run_id.encode(), "W&B run id")
        self.run = wandb.init(project=project, name=run_dir.name, id=run_id, resume="allow", dir=str(run_dir),
                              config=config.to_dict(), group=group or config.env, job_type="train")

    def log(self, numbers: dict, step: int) -> None:
        self.run.log(numbers, step=step)

    def close(self) -> None:
        self.run.finish()


def log_to_all(logs: list[MetricLog], metrics: dict) -> None:
    """Hands every log the record's numbers (not the iteration, nor NaN: no episode finished) at its env_steps."""
    numbers = {key: value for key, value in metrics.items() if isinstance(value, (int, float))
               and not isinstance(value, bool) and key != "iteration" and not math.isnan(value)}
    for log in logs:
        log.log(numbers, metrics["env_steps"])


def import_wandb():
    """The wandb package; a one-line error saying how to install it (checked before a run starts)."""
    try:
        import wandb
    except ImportError:
        raise UnavailableError(f"--wandb logs to Weights & Biases, which needs the wandb package: "
                               f"{install_hint('wandb')}") from None
    return wandb


def import_tensorboard() -> None:
    """Checks that TensorBoard can be written (``--tensorboard``); a one-line error saying how to install it."""
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
    except ImportError:
        raise UnavailableError(f"--tensorboard logs to TensorBoard, which needs the tensorboard package: "
                               f"{install_hint('tensorboard')}") from None


def open_logs(run_dir: Path, config: TrainConfig, wandb_project: str | None, tensorboard: bool | None = None,
              group: str | None = None) -> tuple[list[MetricLog], list[str]]:
    """The logs a run writes to, and a line for each saying where it logs. TensorBoard: on with
    ``tensorboard`` True (checked beforehand, ``import_tensorboard``), off with False, and with None
    on when the package is installed (off, unsaid, when it is not: metrics.jsonl has every metric)."""
    logs: list[MetricLog] = []
    lines: list[str] = []
    if tensorboard is not False:
        try:
            logs.append(TensorBoardLog(run_dir / TENSORBOARD_FOLDER))
            lines.append(f"TensorBoard: logging to {run_dir / TENSORBOARD_FOLDER} (tensorboard --logdir "
                         f"{run_dir.parent})")
        except ImportError:
            pass
    if wandb_project is not None:
        logs.append(WandbLog(wandb_project, run_dir, config, group))
        lines.append(f"Weights & Biases: logging to project {wandb_project}, run {run_dir.name}")
    return logs, lines
