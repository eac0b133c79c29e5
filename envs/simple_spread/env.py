"""simple_spread's glue: declarations, and which kernel runs when."""

import functools

import numpy as np

from warpsim import EnvSpec, Environment, Frame, StateArray
from warpsim.envs.simple_spread import kernels, reference
from warpsim.envs.simple_spread.grid_kernels import GridKernels, grid_kernels
from warpsim.envs.simple_spread.params import COMMUNICATION_SIZE, SimpleSpreadParams
from warpsim.kernels.chunks import pairwise_entries
from warpsim.kernels.grid_layout import GridLayout, agents_per_cell
from warpsim.kernels.mpe import MOVES_X, MOVES_Y, advance_clock
from warpsim.spec import host_points


class SimpleSpread(Environment):
    """MPE2's simple_spread_v3 on the kernels: N agents, N landmarks, cooperative (docs/mpe.md).

    Actions int32[E, N, 1]: 0 none, 1 left, 2 right, 3 down, 4 up (a force of 5); with
    ``continuous_actions``, float32[E, N, 5] in [0, 1] (MPE's Box), a force (a2 - a1, a4 - a3) x 5.
    Observations float32[E, N, 6N], MPE2's: own velocity, own position, each landmark's offset,
    each other agent's offset, the other agents' utterances (zeros); with num_agent_neighbors or
    num_landmark_neighbors, only that many nearest, nearest first, zero-padded.
    Rewards: (1 - local_ratio) x minus the sum over landmarks of the nearest agent's distance,
    plus local_ratio x minus the agents this one touches. Episodes last max_cycles steps.
    """

    name = "simple_spread"
    Params = SimpleSpreadParams

    def describe(self) -> EnvSpec:
        p = self.params
        per_agent = ("E", "N")
        return EnvSpec(
            num_agents=p.N,
            observation_size=4 + 2 * p.landmark_slots + (2 + COMMUNICATION_SIZE) * p.agent_slots,
            action_levels=() if p.continuous_actions else (5,),
            action_bounds=((0.0, 1.0),) * 5 if p.continuous_actions else (),
            state=(
                StateArray("pos_x", np.float32, per_agent, "agent x"),
                StateArray("pos_y", np.float32, per_agent, "agent y"),
                StateArray("vel_x", np.float32, per_agent, "agent x velocity"),
                StateArray("vel_y", np.float32, per_agent, "agent y velocity"),
                StateArray("landmark_x", np.float32, per_agent, "landmark x (landmark i by agent i)"),
                StateArray("landmark_y", np.float32, per_agent, "landmark y"),
                StateArray("t", np.int32, ("E",), "steps since the reset", (0, p.max_cycles)),
            ),
            role_names=("agent",),
            agent_roles=(0,) * p.N,
            write_order=("t", "done", "pos_x", "pos_y", "vel_x", "vel_y", "rewards", "observations", "episode"),
            observation_label=("full" if p.num_agent_neighbors is None and p.num_landmark_neighbors is None else
                               f"partial: {p.agent_slots} agents, {p.landmark_slots} landmarks"),
            # The forces compare every pair; the grids' searches take a few cells each.
            distance_evaluations_per_step=p.N * p.N,
            scratch=(
                StateArray("force_x", np.float32, per_agent, "each agent's force this step"),
                StateArray("force_y", np.float32, per_agent, "each agent's force this step"),
                StateArray("nearest_distance", np.float32, per_agent, "landmark i's distance to its nearest agent"),
                *self._agent_grid.scratch("agent_grid", in_shared=self._grids_in_shared),
                *self._landmark_grid.scratch("landmark_grid", in_shared=self._grids_in_shared),
            ),
        )

    @functools.cached_property
    def _agent_grid(self) -> GridLayout:
        """The agents' grid: searched for each landmark's nearest agent, the agents each one touches and the
        nearest it observes."""
        return GridLayout(self.params.N, agents_per_cell(self.params.num_agent_neighbors or 1))

    @functools.cached_property
    def _landmark_grid(self) -> GridLayout:
        """The landmarks' grid, where an agent observes the nearest of them (one empty cell otherwise)."""
        observed = self.params.num_landmark_neighbors
        return GridLayout(self.params.N, agents_per_cell(observed)) if observed else GridLayout(1, 1)

    @functools.cached_property
    def _grids_in_shared(self) -> bool:
        """Whether both grids fit in a block's shared memory, the landmarks' after the agents'."""
        return self._agent_grid.fits_in_shared_with(self._landmark_grid.grid_bytes)

    @functools.cached_property
    def _shared_bytes(self) -> int:
        """Dynamic shared memory of a launch: the binning's partial sums, and both grids where they fit."""
        if self._grids_in_shared:
            return self._agent_grid.shared_bytes_with(self._landmark_grid.grid_bytes)
        return self._agent_grid.per_thread_bytes

    @functools.cached_property
    def _grid_kernels(self) -> GridKernels:
        p = self.params
        agent_list = 0 if p.num_agent_neighbors is None else min(p.num_agent_neighbors, p.N - 1)
        landmark_list = 0 if p.num_landmark_neighbors is None else min(p.num_landmark_neighbors, p.N)
        return grid_kernels(agent_list, landmark_list, self._grids_in_shared)

    def setup(self) -> None:
        p = self.params
        self.add_constants(moves_x=MOVES_X, moves_y=MOVES_Y,
                           global_weight=np.float32(1 - p.local_ratio), local_weight=np.float32(p.local_ratio),
                           landmark_slots=np.int32(p.landmark_slots), agent_slots=np.int32(p.agent_slots),
                           **self._agent_grid.kernel_constants("agent_grid"),
                           **self._landmark_grid.kernel_constants("landmark_grid"))

    def frame(self, env_index: int) -> Frame:
        s = self.state
        return Frame.centred(host_points(s.pos_x, s.pos_y, env_index), int(s.t[env_index]),
                             host_points(s.landmark_x, s.landmark_y, env_index))

    def workspace_bytes(self) -> int:
        """The NumPy reference's temporaries: a chunk of environments' N x N offsets, distances and
        orders, some 32 bytes a pair; forces and distances, some 32 bytes an agent; and a copy of the
        observations."""
        if self.backend != "numpy":
            return 0
        e, n = self.num_envs, self.num_agents
        return 32 * pairwise_entries(e, n, n) + 32 * e * n + 4 * e * n * self.spec.observation_size

    def reset_numpy(self, envs: np.ndarray) -> None:
        reference.reset(self.views, self.params, self.seed, envs)

    def step_numpy(self) -> None:
        reference.step(self.views, self.params, np.float32(1 - self.params.local_ratio),
                       np.float32(self.params.local_ratio))

    def reset_cuda(self, mask) -> None:
        self.run(kernels.reset_bodies, per="agent", mask=mask)
        self.run(self._grid_kernels.observe_reset, per="block", mask=mask, shared_bytes=self._shared_bytes)

    def step_cuda(self) -> None:
        self.run(advance_clock, per="env")
        self.run(kernels.push_agents_continuous if self.params.continuous_actions else kernels.push_agents,
                 per="agent")
        self.run(kernels.move_agents, per="agent")
        self.run(self._grid_kernels.reward_and_observe, per="block", shared_bytes=self._shared_bytes)
