"""PPO on the device for any warpsim environment (see ``warpsim train --help``)."""

from warpsim.train.config import TrainConfig
from warpsim.train.loop import train, train_experiment
from warpsim.train.trainer import Trainer, TrainingDiverged

__all__ = ["TrainConfig", "Trainer", "TrainingDiverged", "train", "train_experiment"]
