"""simple_tag's glue: declarations, and which kernel runs when."""

import numpy as np

from warpsim import EnvSpec, Environment, StateArray
from warpsim.envs.simple_tag import kernels, reference
from warpsim.envs.simple_tag.params import SimpleTagParams
from warpsim.kernels.mpe import MOVES_X, MOVES_Y, advance_clock, reset_agents


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
            distance_evaluations_per_step=p.num_agents * (p.num_agents + p.num_obstacles),
            scratch=(
                StateArray("force_x", np.float32, per_agent, "each agent's force this step"),
                StateArray("force_y", np.float32, per_agent, "each agent's force this step"),
                StateArray("caught", np.int32, per_agent, "adversaries touching each good agent"),
            ),
        )

    def setup(self) -> None:
        p = self.params
        bodies = reference.bodies(p)
        self.add_constants(moves_x=MOVES_X, moves_y=MOVES_Y, size=bodies["size"],
                           acceleration=bodies["acceleration"], max_speed=bodies["max_speed"],
                           obstacle_slots=np.int32(p.obstacle_slots),
                           agent_slots=np.int32(p.num_agent_neighbors or 0),
                           nearest_obstacles=np.bool_(p.num_landmark_neighbors is not None),
                           nearest_agents=np.bool_(p.num_agent_neighbors is not None))

    def reset_numpy(self, envs: np.ndarray) -> None:
        reference.reset(self.views, self.params, self.seed, envs)

    def step_numpy(self) -> None:
        reference.step(self.views, self.params)

    def reset_cuda(self, mask) -> None:
        self.run(reset_agents, per="agent", mask=mask)
        self.run(kernels.reset_obstacles, per="env", mask=mask)
        self.run(kernels.observe_reset, per="agent", mask=mask)

    def step_cuda(self) -> None:
        self.run(advance_clock, per="env")
        self.run(kernels.push_agents_continuous if self.params.continuous_actions else kernels.push_agents,
                 per="agent")
        self.run(kernels.move_agents, per="agent")
        self.run(kernels.count_catches, per="agent")
        self.run(kernels.reward_and_observe, per="agent")
