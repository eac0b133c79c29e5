"""The template environment's glue: declarations, and which kernel runs when.

Copy this folder to start an environment of your own (docs/custom_envs.md).
"""

import numpy as np

from warpsim import EnvSpec, Environment, StateArray
from warpsim.envs.template import kernels, reference
from warpsim.envs.template.params import BeaconParams


class Beacon(Environment):
    """Agents walk to their environment's beacon; each step within reach earns 1.

    Actions int32[E, N, 1]: 0 stay, 1 +x, 2 -x, 3 +y, 4 -y.
    Observations float32[E, N, 3]: offset to the beacon / L (x, y) and t / T.
    """

    name = "beacon"
    Params = BeaconParams

    def describe(self) -> EnvSpec:
        p = self.params
        arena = (0.0, float(np.float32(p.grid_length)))  # bounds: validate_state() refuses values outside
        return EnvSpec(
            num_agents=p.num_agents,
            observation_size=3,
            action_levels=(5,),
            state=(
                StateArray("pos_x", np.float32, ("E", "N"), "x position in [0, L]", arena),
                StateArray("pos_y", np.float32, ("E", "N"), "y position in [0, L]", arena),
                StateArray("beacon_x", np.float32, ("E",), "the beacon's x", arena),
                StateArray("beacon_y", np.float32, ("E",), "the beacon's y", arena),
                StateArray("t", np.int32, ("E",), "steps since the reset", (0, p.episode_length)),
            ),
            role_names=("walker",),
            agent_roles=(0,) * p.num_agents,
            write_order=("t", "done", "pos_x", "pos_y", "rewards", "observations", "episode"),
            observation_label="beacon offset",
            distance_evaluations_per_step=p.num_agents,  # each agent's distance to the beacon
        )

    def setup(self) -> None:
        self._moves_x = self.constant(reference.MOVES_X)
        self._moves_y = self.constant(reference.MOVES_Y)

    def reset_numpy(self, envs: np.ndarray) -> None:
        reference.reset(self.views, self.params, self.seed, envs)

    def step_numpy(self) -> None:
        reference.step(self.views, self.params)

    def reset_cuda(self, mask) -> None:
        v, p = self.views, self.params
        length = np.float32(p.grid_length)
        self.launch(kernels.reset_beacons, self.num_envs, mask, self.seed, v.episode, length,
                    np.int32(p.num_agents), v.beacon_x, v.beacon_y, v.t)
        self.launch(kernels.reset_agents, self.num_envs * self.num_agents, mask, self.seed, v.episode,
                    length, np.int32(p.episode_length), v.beacon_x, v.beacon_y, v.t,
                    v.pos_x, v.pos_y, v.observations)

    def step_cuda(self) -> None:
        self.advance_clock()
        v, p = self.views, self.params
        self.launch(kernels.move_and_observe, self.num_envs * self.num_agents, v.actions,
                    self._moves_x, self._moves_y, np.float32(p.step_size), np.float32(p.grid_length),
                    np.float32(p.reach_radius) ** 2, np.int32(p.episode_length),
                    v.beacon_x, v.beacon_y, v.t, v.pos_x, v.pos_y, v.rewards, v.observations)

    def advance_clock(self) -> None:
        """t += 1 and the done flags; its own method so a subclass can swap the kernel (cuda_c.py)."""
        self.launch(kernels.advance_clock, self.num_envs, np.int32(self.params.episode_length),
                    self.views.t, self.views.done)
