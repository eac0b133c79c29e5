"""simple_adversary's glue: declarations, and which kernel runs when."""

import numpy as np

from warpsim import EnvSpec, Environment, Frame, StateArray
from warpsim.envs.simple_adversary import kernels, reference
from warpsim.envs.simple_adversary.params import SimpleAdversaryParams
from warpsim.kernels.mpe import MOVES_X, MOVES_Y, advance_clock, reset_agents
from warpsim.spec import host_points


class SimpleAdversary(Environment):
    """MPE2's simple_adversary_v3 on the kernels: an adversary (agent 0, role ``adversary``) and N good agents
    (role ``agent``) among N landmarks, one the goal, which only the good agents know (docs/mpe.md).

    Actions int32[E, N + 1, 1]: 0 none, 1 left, 2 right, 3 down, 4 up (a force of 5); with ``continuous_actions``,
    float32[E, N + 1, 5] in [0, 1] (MPE's Box). Observations, MPE2's: a good agent's goal offset, then the
    landmarks' offsets and the other agents' (the adversary's 2 entries fewer: ``role_observation_sizes``).
    """

    name = "simple_adversary"
    Params = SimpleAdversaryParams

    def describe(self) -> EnvSpec:
        p = self.params
        per_agent, per_landmark = ("E", "N"), ("E", p.N)
        sizes = p.observation_sizes()
        return EnvSpec(
            num_agents=p.N + 1,
            observation_size=max(sizes),
            action_levels=() if p.continuous_actions else (5,),
            action_bounds=((0.0, 1.0),) * 5 if p.continuous_actions else (),
            state=(
                StateArray("pos_x", np.float32, per_agent, "agent x"),
                StateArray("pos_y", np.float32, per_agent, "agent y"),
                StateArray("vel_x", np.float32, per_agent, "agent x velocity"),
                StateArray("vel_y", np.float32, per_agent, "agent y velocity"),
                StateArray("landmark_x", np.float32, per_landmark, "landmark x"),
                StateArray("landmark_y", np.float32, per_landmark, "landmark y"),
                StateArray("goal", np.int32, ("E",), "the goal landmark", (0, p.N - 1)),
                StateArray("t", np.int32, ("E",), "steps since the reset", (0, p.max_cycles)),
            ),
            role_names=("adversary", "agent"),
            agent_roles=(0,) + (1,) * p.N,
            role_observation_sizes=sizes,
            write_order=("t", "done", "pos_x", "pos_y", "vel_x", "vel_y", "rewards", "observations", "episode"),
            observation_label=("full" if p.num_agent_neighbors is None and p.num_landmark_neighbors is None else
                               f"partial: {p.agent_slots} agents, {p.landmark_slots} landmarks"),
            distance_evaluations_per_step=(p.N + 1) * (2 * p.N + 1),
        )

    def setup(self) -> None:
        p = self.params
        self.add_constants(moves_x=MOVES_X, moves_y=MOVES_Y, landmark_slots=np.int32(p.landmark_slots),
                           agent_slots=np.int32(p.agent_slots),
                           nearest_landmarks=np.bool_(p.num_landmark_neighbors is not None),
                           nearest_agents=np.bool_(p.num_agent_neighbors is not None))

    def frame(self, env_index: int) -> Frame:
        s = self.state
        return Frame.centred(host_points(s.pos_x, s.pos_y, env_index), int(s.t[env_index]),
                             host_points(s.landmark_x, s.landmark_y, env_index), int(s.goal[env_index]))

    def workspace_bytes(self) -> int:
        """The NumPy reference's temporaries: an agent's offsets to all others, some 64 bytes an agent,
        and two copies of the observations."""
        if self.backend != "numpy":
            return 0
        e, n = self.num_envs, self.num_agents
        return 64 * e * n + 8 * e * n * self.spec.observation_size

    def reset_numpy(self, envs: np.ndarray) -> None:
        reference.reset(self.views, self.params, self.seed, envs)

    def step_numpy(self) -> None:
        reference.step(self.views, self.params)

    def reset_cuda(self, mask) -> None:
        self.run(reset_agents, per="agent", mask=mask)
        self.run(kernels.reset_landmarks, per="env", mask=mask)
        self.run(kernels.observe_reset, per="agent", mask=mask)

    def step_cuda(self) -> None:
        self.run(advance_clock, per="env")
        self.run(kernels.move_agents_continuous if self.params.continuous_actions else kernels.move_agents,
                 per="agent")
        self.run(kernels.reward_and_observe, per="agent")
