"""warpsim: multi-agent reinforcement-learning environments stepped on the GPU."""

from warpsim.environment import EnvSpec, Environment, StateArray
from warpsim.registry import make, register, registered
from warpsim.envs import TagContinuous

register("tag_continuous", TagContinuous)

__version__ = "0.1.0"
__all__ = ["EnvSpec", "Environment", "StateArray", "TagContinuous", "make", "register", "registered"]
