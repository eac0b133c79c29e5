"""A scripted simple_spread team: the bar a trained team is held to (docs/mpe.md, "Learning").

At the start of an episode each agent is given a landmark, by the assignment of agents to
landmarks with the least total distance (the Hungarian algorithm, scipy's
``linear_sum_assignment``). Then, every step, each agent takes the one of its 5 moves that
brings it nearest to its landmark ``LOOKAHEAD`` steps on, holding that move, by MPE's own
motion (damping, then the force over dt). It knows nothing of the other agents' contacts.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from warpsim.errors import InvalidValueError
from warpsim.kernels.mpe import DT, KEPT_VELOCITY, MOVES_X, MOVES_Y, SENSITIVITY

LOOKAHEAD = 3
"""Steps ahead a move is judged by: one step alone overshoots, as the velocity carries on."""


def assignment(agent_x: np.ndarray, agent_y: np.ndarray, landmark_x: np.ndarray,
               landmark_y: np.ndarray) -> np.ndarray:
    """int64[E, N]: each agent's landmark, the assignment with the least total distance, from
    float32[E, N] positions of the agents and of the landmarks."""
    distance = np.hypot(agent_x[:, :, None] - landmark_x[:, None, :], agent_y[:, :, None] - landmark_y[:, None, :])
    return np.stack([linear_sum_assignment(costs)[1] for costs in distance]).astype(np.int64)


def moves(x: np.ndarray, y: np.ndarray, velocity_x: np.ndarray, velocity_y: np.ndarray, target_x: np.ndarray,
          target_y: np.ndarray) -> np.ndarray:
    """int32[E, N]: each agent's move (0 none, 1 left, 2 right, 3 down, 4 up) that brings it nearest to
    its target ``LOOKAHEAD`` steps on, the move held; float32[E, N] positions, velocities and targets."""
    x, y, velocity_x, velocity_y = (np.repeat(value[..., None], len(MOVES_X), -1).astype(np.float64)
                                    for value in (x, y, velocity_x, velocity_y))
    for _ in range(LOOKAHEAD):
        velocity_x = velocity_x * KEPT_VELOCITY + MOVES_X * SENSITIVITY * DT
        velocity_y = velocity_y * KEPT_VELOCITY + MOVES_Y * SENSITIVITY * DT
        x, y = x + velocity_x * DT, y + velocity_y * DT
    return np.hypot(x - target_x[..., None], y - target_y[..., None]).argmin(-1).astype(np.int32)


class ScriptedTeam:
    """Plays ``env`` (simple_spread, discrete actions; its state is read on the host): ``act()`` writes
    every agent's move into ``env.actions``; call it before each step. Environments that have just
    reset (their clock at 0) get a new assignment."""

    def __init__(self, env):
        if env.name != "simple_spread" or env.params.continuous_actions:
            raise InvalidValueError(f"the scripted team plays simple_spread with discrete actions; got {env.name} "
                                    f"with continuous_actions={getattr(env.params, 'continuous_actions', None)}")
        self.env = env
        self.targets = np.zeros((env.num_envs, env.num_agents), np.int64)

    def act(self) -> None:
        views = _host(self.env, ("pos_x", "pos_y", "vel_x", "vel_y", "landmark_x", "landmark_y", "t"))
        started = views["t"] == 0
        if started.any():
            self.targets[started] = assignment(*(views[name][started] for name in
                                                 ("pos_x", "pos_y", "landmark_x", "landmark_y")))
        target_x = np.take_along_axis(views["landmark_x"], self.targets, 1)
        target_y = np.take_along_axis(views["landmark_y"], self.targets, 1)
        chosen = moves(views["pos_x"], views["pos_y"], views["vel_x"], views["vel_y"], target_x, target_y)
        self.env.actions[..., 0] = torch.as_tensor(chosen).to(self.env.actions)


def coverage(env) -> np.ndarray:
    """float64[E]: the sum over landmarks of the nearest agent's distance, now (MPE's measure of
    how well the landmarks are covered; 0 when an agent sits on each)."""
    views = _host(env, ("pos_x", "pos_y", "landmark_x", "landmark_y"))
    distance = np.hypot(views["pos_x"][:, :, None] - views["landmark_x"][:, None, :],
                        views["pos_y"][:, :, None] - views["landmark_y"][:, None, :])
    return distance.min(1).sum(-1)


def _host(env, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {name: getattr(env.state, name).cpu().numpy() for name in names}
