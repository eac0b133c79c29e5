"""The environments warpsim ships, one package each."""

from warpsim.envs.tag_continuous import TagContinuous
from warpsim.envs.tag_gridworld import TagGridworld
from warpsim.envs.template import Beacon

__all__ = ["Beacon", "TagContinuous", "TagGridworld"]
