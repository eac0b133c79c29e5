"""The template environment's glue: declarations, and which kernel runs when.

Copy this folder to start an environment of your own (docs/custom_envs.md).
"""

import numpy as np

from warpsim import EnvSpec, Environment, Frame, StateArray
from warpsim.envs.template import kernels, reference
from warpsim.envs.template.params import BeaconParams
from warpsim.spec import host_points


class Beacon(Environment):
    """Agents walk to their environment's beacon; each step within reach earns 1.

    Actions int32[E, N, 1]: 0 stay, 1 +x, 2 -x, 3 +y, 4 -y. With ``continuous_actions``,
    float32[E, N, 2]: a velocity (vx, vy) in [-1, 1]^2, clamped to it, times the step size.
    Observations float32[E, N, 3]: offset to the beacon / L (x, y) and t / T.
    """

    name = "beacon"
    Params = BeaconParams

    def describe(self) -> EnvSpec:
        p = self.params
        arena = (0.0, float(np.float32(p.grid_length)))  # bounds: validate_state() refuses values outside
        return EnvSpec(
            # Required:
            num_agents=p.num_agents,
            observation_size=3,
            action_levels=() if p.continuous_actions else (5,),
            action_bounds=((-1.0, 1.0), (-1.0, 1.0)) if p.continuous_actions else (),  # or continuous: (low, high)
            state=(
                StateArray("pos_x", np.float32, ("E", "N"), "x position in [0, L]", arena),
                StateArray("pos_y", np.float32, ("E", "N"), "y position in [0, L]", arena),
                StateArray("beacon_x", np.float32, ("E",), "the beacon's x", arena),
                StateArray("beacon_y", np.float32, ("E",), "the beacon's y", arena),
                StateArray("t", np.int32, ("E",), "steps since the reset", (0, p.episode_length)),
            ),
            role_names=("walker",),
            agent_roles=(0,) * p.num_agents,
            # Optional (counters, scratch: none here):
            write_order=("t", "done", "pos_x", "pos_y", "rewards", "observations", "episode"),
            observation_label="beacon offset",
            distance_evaluations_per_step=p.num_agents,  # each agent's distance to the beacon
        )

    def setup(self) -> None:
        p = self.params
        self.add_constants(moves_x=reference.MOVES_X, moves_y=reference.MOVES_Y,
                           reach_radius_squared=np.float32(p.reach_radius) ** 2)

    def frame(self, env_index: int) -> Frame:
        """Optional: environment ``env_index`` for ``warpsim render``: the walkers, and the beacon as the
        landmark they are to reach."""
        s = self.state
        beacon = np.array([[s.beacon_x[env_index].item(), s.beacon_y[env_index].item()]])
        return Frame(host_points(s.pos_x, s.pos_y, env_index), np.ones(self.num_agents, bool),
                     self.params.grid_length, int(s.t[env_index]), landmarks=beacon, goal=0)

    def reset_numpy(self, envs: np.ndarray) -> None:
        reference.reset(self.views, self.params, self.seed, envs)

    def step_numpy(self) -> None:
        reference.step(self.views, self.params)

    def reset_cuda(self, mask) -> None:
        self.run(kernels.reset_beacons, per="env", mask=mask)
        self.run(kernels.reset_agents, per="agent", mask=mask)

    def step_cuda(self) -> None:
        self.advance_clock()
        move = kernels.move_and_observe_continuous if self.params.continuous_actions else kernels.move_and_observe
        self.run(move, per="agent")

    def advance_clock(self) -> None:
        """t += 1 and the done flags; its own method so a subclass can swap the kernel (cuda_c.py)."""
        self.run(kernels.advance_clock, per="env")
