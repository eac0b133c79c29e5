"""simple_speaker_listener's glue: declarations, and which kernel runs when."""

import numpy as np

from warpsim import EnvSpec, Environment, Frame, StateArray
from warpsim.envs.simple_adversary.kernels import reset_landmarks
from warpsim.envs.simple_speaker_listener import kernels, reference
from warpsim.envs.simple_speaker_listener.params import (
    LANDMARKS,
    LANDMARK_COLOURS,
    MOVES,
    OBSERVATION_SIZES,
    SimpleSpeakerListenerParams,
)
from warpsim.kernels.mpe import MOVES_X, MOVES_Y, advance_clock, reset_agents
from warpsim.spec import host_points


class SimpleSpeakerListener(Environment):
    """MPE2's simple_speaker_listener_v4 on the kernels: a speaker (agent 0, role ``speaker``) who sees the goal's
    colour and says a word, and a listener (agent 1, role ``listener``) who hears it and moves (docs/mpe.md).

    Each role acts with its own actions (``EnvSpec.role_action_levels``): the speaker's int32[E, 1, 1] word, 0 to
    2, and the listener's move, 0 none, 1 left, 2 right, 3 down, 4 up (a force of 5), in rows of one component;
    with ``continuous_actions``, the speaker's 3 values and the listener's 5 in [0, 1] (MPE's Box), in rows of
    5. Observations, MPE2's: the speaker's 3 (the goal's colour) and the listener's 11 (its velocity, the
    landmarks' offsets, the word), in rows of 11 (``role_observation_sizes``).
    """

    name = "simple_speaker_listener"
    Params = SimpleSpeakerListenerParams

    def describe(self) -> EnvSpec:
        p = self.params
        per_agent, per_landmark = ("E", "N"), ("E", LANDMARKS)
        unit = (0.0, 1.0)
        actions = (dict(action_levels=(), action_bounds=(unit,) * MOVES,
                        role_action_bounds=((unit,) * LANDMARKS, (unit,) * MOVES)) if p.continuous_actions else
                   dict(action_levels=(MOVES,), role_action_levels=((LANDMARKS,), (MOVES,))))
        return EnvSpec(
            num_agents=2,
            observation_size=max(OBSERVATION_SIZES),
            state=(
                StateArray("pos_x", np.float32, per_agent, "agent x (the speaker's never changes)"),
                StateArray("pos_y", np.float32, per_agent, "agent y"),
                StateArray("vel_x", np.float32, per_agent, "agent x velocity (the speaker's stays 0)"),
                StateArray("vel_y", np.float32, per_agent, "agent y velocity"),
                StateArray("landmark_x", np.float32, per_landmark, "landmark x"),
                StateArray("landmark_y", np.float32, per_landmark, "landmark y"),
                StateArray("goal", np.int32, ("E",), "the goal landmark", (0, LANDMARKS - 1)),
                StateArray("word", np.float32, ("E", LANDMARKS), "what the speaker said last", (0.0, 1.0)),
                StateArray("t", np.int32, ("E",), "steps since the reset", (0, p.max_cycles)),
            ),
            role_names=("speaker", "listener"),
            agent_roles=(0, 1),
            role_observation_sizes=OBSERVATION_SIZES,
            write_order=("t", "done", "word", "pos_x", "pos_y", "vel_x", "vel_y", "rewards", "observations",
                         "episode"),
            observation_label="full",
            distance_evaluations_per_step=2 * (LANDMARKS + 1),
            **actions,
        )

    def setup(self) -> None:
        self.add_constants(moves_x=MOVES_X, moves_y=MOVES_Y, landmark_colours=LANDMARK_COLOURS)

    def frame(self, env_index: int) -> Frame:
        s = self.state
        return Frame.centred(host_points(s.pos_x, s.pos_y, env_index), int(s.t[env_index]),
                             host_points(s.landmark_x, s.landmark_y, env_index), int(s.goal[env_index]))

    def reset_numpy(self, envs: np.ndarray) -> None:
        reference.reset(self.views, self.params, self.seed, envs)

    def step_numpy(self) -> None:
        reference.step(self.views, self.params)

    def reset_cuda(self, mask) -> None:
        self.run(reset_agents, per="agent", mask=mask)
        self.run(reset_landmarks, per="env", mask=mask)
        self.run(kernels.observe_reset, per="agent", mask=mask)

    def step_cuda(self) -> None:
        self.run(advance_clock, per="env")
        self.run(kernels.speak_and_move_continuous if self.params.continuous_actions else kernels.speak_and_move,
                 per="agent")
        self.run(kernels.reward_and_observe, per="agent")
