"""Parameters of the template environment: a frozen dataclass, validated on creation."""

from dataclasses import dataclass

from warpsim.errors import InvalidValueError
from warpsim.limits import MAX_INT32, MAX_MAGNITUDE, MIN_POSITIVE, is_int, is_real

DRAWS_PER_AGENT = 2
"""Random numbers an agent draws at a reset, x and y; the beacon draws as many, as agent N."""


@dataclass(frozen=True)
class BeaconParams:
    """Agents move on a square arena towards their environment's beacon."""

    num_agents: int = 4
    """Agents per environment; >= 1."""
    grid_length: float = 10.0
    """Side L of the arena [0, L] x [0, L]; > 0."""
    episode_length: int = 50
    """Steps T of an episode; >= 1."""
    step_size: float = 0.5
    """Distance an agent moves per step; > 0."""
    reach_radius: float = 1.0
    """An agent within this distance of the beacon earns 1 this step; >= 0."""

    def __post_init__(self):
        # Reals within warpsim.limits keep float32 finite: no inf, no division by a value rounded to 0.
        for name, value, ok, allowed in (
            ("num_agents", self.num_agents, is_int(self.num_agents), f"an integer in [1, {MAX_INT32}]"),
            ("grid_length", self.grid_length, is_real(self.grid_length, MIN_POSITIVE),
             f"a number in [{MIN_POSITIVE:g}, {MAX_MAGNITUDE:g}]"),
            ("episode_length", self.episode_length, is_int(self.episode_length), f"an integer in [1, {MAX_INT32}]"),
            ("step_size", self.step_size, is_real(self.step_size, MIN_POSITIVE),
             f"a number in [{MIN_POSITIVE:g}, {MAX_MAGNITUDE:g}]"),
            ("reach_radius", self.reach_radius, is_real(self.reach_radius, 0), f"a number in [0, {MAX_MAGNITUDE:g}]"),
        ):
            if not ok:
                raise InvalidValueError(f"{name}={value!r} is not allowed; give {allowed}")
