"""beacon: the copy-me template environment (docs/custom_envs.md walks through it)."""

from warpsim.envs.template.env import Beacon
from warpsim.envs.template.params import BeaconParams

ENVIRONMENT = Beacon
"""The class warpsim registers for this folder, under its ``name``."""

__all__ = ["ENVIRONMENT", "Beacon", "BeaconParams"]
