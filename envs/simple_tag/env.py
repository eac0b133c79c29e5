"""simple_tag's glue: declarations, and which kernel runs when."""

import functools

import numpy as np

from warpsim import EnvSpec, Environment, Frame, StateArray
from warpsim.envs.simple_tag import kernels, reference
from warpsim.envs.simple_tag.grid_kernels import GridKernels, grid_kernels
from warpsim.envs.simple_tag.params import SimpleTagParams
from warpsim.kernels.chunks import pairwise_entries
from warpsim.kernels.grid_layout import GridLayout, agents_per_cell
from warpsim.kernels.mpe import MOVES_X, MOVES_Y, advance_clock, reset_agents
from warpsim.spec import host_points


class SimpleTag(Environment):
    """MPE2's simple_tag_v3 on the kernels: adversaries (agents 0 .. A-1, role ``adversary``) chase good agents
    (role ``agent``) among obstacles (docs/mpe.md).

    Actions int32[E, N, 1]: 0 none, 1 left, 2 right, 3 down, 4 up (a force of the agent's acceleration: 3 for an
    adversary, 4 for a good agent); with ``continuous_actions``, float32[E, N, 5] in [0, 1] (MPE's Box).
    Observations, MPE2's: own velocity and position, each obstacle's offset, each other agent's offset, each
    other good agent's velocity; an adversary sees one good agent more than a good agent does, so the roles'
    sizes differ (``role_observation_sizes``) unless num_agent_neighbors fixes both. Episodes last max_cycles steps.
    Counter ``tags``: the touches of an adversary and a good agent (an adversary's reward is 10 for each).
    """

    name = "simple_tag"
    Params = SimpleTagParams

    def describe(self) -> EnvSpec:
        p = self.params
        per_agent, per_obstacle = ("E", "N"), ("E", max(p.num_obstacles, 1))  # a column unused without obstacles
        sizes = p.observation_sizes()
        return EnvSpec(
            num_agents=p.num_agents,
            observation_size=max(sizes),
            action_levels=() if p.continuous_actions else (5,),
            action_bounds=((0.0, 1.0),) * 5 if p.continuous_actions else (),
            state=(
                StateArray("pos_x", np.float32, per_agent, "agent x"),
                StateArray("pos_y", np.float32, per_agent, "agent y"),
                StateArray("vel_x", np.float32, per_agent, "agent x velocity"),
                StateArray("vel_y", np.float32, per_agent, "agent y velocity"),
                StateArray("obstacle_x", np.float32, per_obstacle, "obstacle x"),
                StateArray("obstacle_y", np.float32, per_obstacle, "obstacle y"),
                StateArray("t", np.int32, ("E",), "steps since the reset", (0, p.max_cycles)),
                StateArray("tags", np.int32, ("E",), "touches of an adversary and a good agent, summed over the "
                           "steps since the environment was made"),
            ),
            role_names=("adversary", "agent"),
            counters=("tags",),
            agent_roles=(0,) * p.num_adversaries + (1,) * p.num_good,
            role_observation_sizes=sizes,
            write_order=("t", "done", "pos_x", "pos_y", "vel_x", "vel_y", "tags", "rewards", "observations",
                         "episode"),
            observation_label=("full" if p.num_agent_neighbors is None and p.num_landmark_neighbors is None else
                               f"partial: {p.num_agent_neighbors} agents, {p.obstacle_slots} obstacles"),
            # The forces compare every pair; the grids' searches take a few cells each.
            distance_evaluations_per_step=p.num_agents * (p.num_agents + p.num_obstacles),
            scratch=(
                StateArray("force_x", np.float32, per_agent, "each agent's force this step"),
                StateArray("force_y", np.float32, per_agent, "each agent's force this step"),
                *self._adversary_grid.scratch("adversary_grid", in_shared=self._grids_in_shared),
                *self._agent_grid.scratch("agent_grid", in_shared=self._grids_in_shared),
            ),
        )

    @functools.cached_property
    def _adversary_grid(self) -> GridLayout:
        """The adversaries' grid, searched for those touching each good agent."""
        return GridLayout(self.params.num_adversaries, agents_per_cell(1))

    @functools.cached_property
    def _agent_grid(self) -> GridLayout:
        """All agents' grid, where each observes the nearest of them (one empty cell otherwise)."""
        observed = self.params.num_agent_neighbors
        return GridLayout(self.params.num_agents, agents_per_cell(observed)) if observed else GridLayout(1, 1)

    @functools.cached_property
    def _grids_in_shared(self) -> bool:
        """Whether both grids fit in a block's shared memory, the agents' after the adversaries'."""
        return self._adversary_grid.fits_in_shared_with(self._agent_grid.grid_bytes)

    @functools.cached_property
    def _shared_bytes(self) -> int:
        """Dynamic shared memory of a launch: the binning's partial sums, and both grids where they fit."""
        if self._grids_in_shared:
            return self._adversary_grid.shared_bytes_with(self._agent_grid.grid_bytes)
        return self._adversary_grid.per_thread_bytes

    @functools.cached_property
    def _grid_kernels(self) -> GridKernels:
        p = self.params
        agent_list = 0 if p.num_agent_neighbors is None else min(p.num_agent_neighbors, p.num_agents - 1)
        return grid_kernels(agent_list, self._grids_in_shared)

    def setup(self) -> None:
        p = self.params
        bodies = reference.bodies(p)
        self.add_constants(moves_x=MOVES_X, moves_y=MOVES_Y, size=bodies["size"],
                           acceleration=bodies["acceleration"], max_speed=bodies["max_speed"],
                           obstacle_slots=np.int32(p.obstacle_slots),
                           agent_slots=np.int32(p.num_agent_neighbors or 0),
                           nearest_obstacles=np.bool_(p.num_landmark_neighbors is not None),
                           **self._adversary_grid.kernel_constants("adversary_grid"),
                           **self._agent_grid.kernel_constants("agent_grid"))

    def frame(self, env_index: int) -> Frame:
        s, obstacles = self.state, self.params.num_obstacles
        return Frame.centred(host_points(s.pos_x, s.pos_y, env_index), int(s.t[env_index]),
                             host_points(s.obstacle_x, s.obstacle_y, env_index, obstacles))

    def workspace_bytes(self) -> int:
        """The NumPy reference's temporaries: a chunk of environments' adversary-to-good-agent distances,
        some 16 bytes a pair; an agent's offsets to all others, some 64 bytes an agent; and two copies of
        the observations."""
        if self.backend != "numpy":
            return 0
        e, n, a = self.num_envs, self.num_agents, self.params.num_adversaries
        return 16 * pairwise_entries(e, a, n - a) + 64 * e * n + 8 * e * n * self.spec.observation_size

    def reset_numpy(self, envs: np.ndarray) -> None:
        reference.reset(self.views, self.params, self.seed, envs)

    def step_numpy(self) -> None:
        reference.step(self.views, self.params)

    def reset_cuda(self, mask) -> None:
        self.run(reset_agents, per="agent", mask=mask)
        self.run(kernels.reset_obstacles, per="env", mask=mask)
        self.run(self._grid_kernels.observe_reset, per="block", mask=mask, shared_bytes=self._shared_bytes)

    def step_cuda(self) -> None:
        self.run(advance_clock, per="env")
        self.run(kernels.push_agents_continuous if self.params.continuous_actions else kernels.push_agents,
                 per="agent")
        self.run(kernels.move_agents, per="agent")
        self.run(self._grid_kernels.reward_and_observe, per="block", shared_bytes=self._shared_bytes)
