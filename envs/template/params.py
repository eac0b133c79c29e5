"""Parameters of the template environment: a frozen dataclass, validated on creation."""

from dataclasses import dataclass

from warpsim.limits import MAX_INT32, MAX_MAGNITUDE, MIN_POSITIVE
from warpsim.validation import check_fields, require_bool, require_int, require_real

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
    continuous_actions: bool = False
    """Each agent's action is a velocity (vx, vy) in [-1, 1]^2, times step_size per step, instead of one of
    five moves."""

    def __post_init__(self):
        # Each field is stored as the plain int or float its check returns (np.float32(0.5) becomes 0.5).
        # Reals within warpsim.limits keep float32 finite: no inf, no division by a value rounded to 0.
        check_fields(self, require_int, ("num_agents", "episode_length"), 1, MAX_INT32)
        check_fields(self, require_real, ("grid_length", "step_size"), MIN_POSITIVE, MAX_MAGNITUDE)
        check_fields(self, require_real, ("reach_radius",), 0, MAX_MAGNITUDE)
        check_fields(self, require_bool, ("continuous_actions",))
