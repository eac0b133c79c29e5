"""warpsim: multi-agent reinforcement-learning environments stepped on the GPU."""

from warpsim.check import check
from warpsim.environment import EnvSpec, Environment, Frame, StateArray
from warpsim.envs import Beacon, TagContinuous, TagGridworld
from warpsim.errors import WarpsimError
from warpsim.registry import make, register, registered
from warpsim.train.evaluate import evaluate_run as evaluate

register("tag_continuous", TagContinuous)
register("tag_gridworld", TagGridworld)
register("beacon", Beacon)

__version__ = "0.1.0"
__all__ = ["Beacon", "EnvSpec", "Environment", "Frame", "StateArray", "TagContinuous", "TagGridworld", "check",
           "evaluate", "WarpsimError", "make", "register", "registered"]
