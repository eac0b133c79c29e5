"""beacon: the copy-me template environment (docs/custom_envs.md walks through it)."""

from warpsim.envs.template.env import Beacon
from warpsim.envs.template.params import BeaconParams

__all__ = ["Beacon", "BeaconParams"]
