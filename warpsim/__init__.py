"""warpsim: multi-agent reinforcement-learning environments stepped on the GPU."""

from warpsim.analysis.evaluate import evaluate_run as evaluate
from warpsim.analysis.trained_policy import TrainedPolicy, load_policy
from warpsim.check import check
from warpsim.environment import EnvSpec, Environment, Frame, StateArray
from warpsim.envs.tag_continuous import TagContinuous  # importing warpsim.envs registers every folder of envs/
from warpsim.envs.tag_gridworld import TagGridworld
from warpsim.envs.template import Beacon
from warpsim.errors import WarpsimError
from warpsim.registry import make, register, registered

__version__ = "0.2.0.dev0"
"""The one place the version is written (setup.cfg reads it): the coming 0.2.0 while it is unreleased."""
__all__ = ["Beacon", "EnvSpec", "Environment", "Frame", "StateArray", "TagContinuous", "TagGridworld", "check",
           "evaluate", "load_policy", "TrainedPolicy", "WarpsimError", "make", "register", "registered"]
