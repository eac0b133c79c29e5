"""Parameters of the template environment: a frozen dataclass, validated on creation."""

from dataclasses import dataclass

from warpsim.errors import InvalidValueError


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
        for name, value, ok, allowed in (
            ("num_agents", self.num_agents,
             isinstance(self.num_agents, int) and self.num_agents >= 1, "an integer >= 1"),
            ("grid_length", self.grid_length, self.grid_length > 0, "a number > 0"),
            ("episode_length", self.episode_length,
             isinstance(self.episode_length, int) and self.episode_length >= 1, "an integer >= 1"),
            ("step_size", self.step_size, self.step_size > 0, "a number > 0"),
            ("reach_radius", self.reach_radius, self.reach_radius >= 0, "a number >= 0"),
        ):
            if not ok:
                raise InvalidValueError(f"{name}={value!r} is not allowed; give {allowed}")
