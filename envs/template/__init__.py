"""beacon: the copy-me template environment (docs/custom_envs.md walks through it)."""

from warpsim.envs.template.env import Beacon
from warpsim.envs.template.params import BeaconParams

ENVIRONMENT = Beacon
"""The class warpsim registers for this folder, under its ``name``."""

CHECK_PARAMS = dict(num_agents=3, episode_length=4)
"""Parameters small enough for the CUDA simulator, with episodes short enough that a few
dozen steps cover resets: the test suite runs ``warpsim.check`` with them."""

__all__ = ["CHECK_PARAMS", "ENVIRONMENT", "Beacon", "BeaconParams"]
