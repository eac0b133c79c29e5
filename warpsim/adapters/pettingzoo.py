"""PettingZoo adapter: one environment of a warpsim batch as a PettingZoo ``ParallelEnv``.

``parallel_env("tag_continuous", num_runners=3)`` makes a one-environment batch (NumPy
backend by default) and wraps it; ``WarpsimParallelEnv(env, index)`` wraps environment
``index`` of any batch and ``parallel_envs(env)`` wraps each of them.

Stepping one environment of a batch. warpsim steps a whole batch at once; it has no
per-environment step. A view makes its own ``step()`` and ``reset()`` change only its
environment: it runs the batch-wide operation and then puts the other environments'
rows back (every state array declared with an ``E`` dimension, the observations,
rewards, done and terminated flags and episode counters). So each view behaves as an independent
environment, stepped in any order and at its own pace, and a view's trajectory does
not depend on the others. The price: each view step is one batch step plus copies, so
E views cost E batch steps per round. The adapter is for PettingZoo tools and tests;
for throughput use the batch API or ``warpsim train``. A one-environment batch (the
common case) copies nothing.

Agents are named by role and their index within it (``tagger_0``, ``runner_3``).
An agent leaves ``agents``, terminated, on the step the environment's ``frame()``
first shows it out of the game (tag_continuous: a tagged runner that exits). When the
episode ends (``done``) the remaining agents are terminated if the environment's
``terminated`` flag says its rules ended it, else truncated (a time limit). The adapter
steps with ``auto_reset=False``, so the last step's observations are the true final
ones; ``reset()`` starts the next episode.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from warpsim.environment import EnvSpec, Environment
from warpsim.errors import InvalidTypeError, InvalidValueError
from warpsim.extras import install_hint
from warpsim.kernels.random import random_key
from warpsim.layout import action_limits
from warpsim.registry import make
from warpsim.render import FrameCanvas

try:
    from gymnasium import spaces
    from pettingzoo import ParallelEnv
except ImportError as error:
    raise ImportError(f"the PettingZoo adapter needs pettingzoo: {install_hint('pettingzoo')}") from error

__all__ = ["WarpsimParallelEnv", "agent_names", "parallel_env", "parallel_envs"]

RENDER_MODES = ("rgb_array",)


def agent_names(spec: EnvSpec) -> list[str]:
    """One name per agent, in agent order: its role's name and its index within the role."""
    seen: Counter[int] = Counter()
    names = []
    for role in spec.agent_roles:
        names.append(f"{spec.role_names[role]}_{seen[role]}")
        seen[role] += 1
    return names


def observation_sizes(spec: EnvSpec) -> list[int]:
    """Each agent's observation size, in agent order: its role's."""
    return [spec.observation_size_of(spec.role_names[role]) for role in spec.agent_roles]


def _action_space(spec: EnvSpec, role: str) -> spaces.Discrete | spaces.MultiDiscrete | spaces.Box:
    """The action space of an agent of ``role``: Discrete (one component) or MultiDiscrete, or a float32 Box
    of the bounds; the role's own components (``EnvSpec.action_size_of``)."""
    if spec.continuous_of(role):
        bounds = np.array(spec.action_bounds_of(role), np.float32)
        return spaces.Box(bounds[:, 0], bounds[:, 1], (len(bounds),), np.float32)
    levels = spec.action_levels_of(role)
    return spaces.Discrete(levels[0]) if len(levels) == 1 else spaces.MultiDiscrete(list(levels))


class WarpsimParallelEnv(ParallelEnv):
    """Environment ``index`` of the warpsim batch ``env`` as a PettingZoo ``ParallelEnv``.

    See the module docstring for how a view steps one environment of a batch, names its
    agents and tells terminations from truncations. ``reset(seed=s)`` starts the
    environment's random stream over from ``s`` (the same start as
    ``warpsim.make(..., seed=s)`` gives environment ``index``); ``reset()`` continues it,
    and a view's first ``reset()`` starts it from the batch's seed. ``render_mode``
    ``"rgb_array"`` makes ``render()`` return uint8[H, W, 3] drawn from ``env.frame(index)``.
    Make one view per environment: two views of one environment would share its state.
    """

    metadata = {"name": "warpsim", "render_modes": list(RENDER_MODES)}

    def __init__(self, env: Environment, index: int = 0, render_mode: str | None = None):
        if not isinstance(env, Environment):
            raise InvalidTypeError(
                f"WarpsimParallelEnv wraps a warpsim.Environment (e.g. warpsim.make(...)), got {env!r}")
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool) or not 0 <= index < env.num_envs:
            raise InvalidValueError(f"index={index!r} is not allowed; give an integer in [0, {env.num_envs - 1}] "
                             f"(the batch has num_envs={env.num_envs})")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise InvalidValueError(f"render_mode={render_mode!r} is not allowed; give None or one of {RENDER_MODES}")
        self.env = env
        self.index = int(index)
        self.render_mode = render_mode
        self.metadata = {"name": env.display_name, "render_modes": list(RENDER_MODES)}
        self.possible_agents = agent_names(env.spec)
        self.agents: list[str] = []
        self._agent_ids = {name: i for i, name in enumerate(self.possible_agents)}
        # one space object per agent, as PettingZoo asks: seeding one must not seed another
        self._observation_spaces = {
            name: spaces.Box(-np.inf, np.inf, (size,), np.float32)
            for name, size in zip(self.possible_agents, observation_sizes(env.spec))}
        self._action_spaces = {name: _action_space(env.spec, env.spec.role_names[role])
                               for name, role in zip(self.possible_agents, env.spec.agent_roles)}
        self._restart_stream_from: np.uint64 | None = env.seed
        self._seed = env.seed
        self._canvas: FrameCanvas | None = None

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_spaces[self._checked_name(agent)]

    def action_space(self, agent: str) -> spaces.Discrete | spaces.MultiDiscrete | spaces.Box:
        return self._action_spaces[self._checked_name(agent)]

    def reset(self, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
        """Starts a new episode; ``options`` are accepted and unused."""
        if seed is not None:
            self._restart_stream_from = random_key(seed, self.env.streams)
        if self._restart_stream_from is not None:
            self._seed = self._restart_stream_from
            self._restart_stream_from = None
            self.env.state.episode[self.index] = 0  # the stream's counter: its first start comes next
        batch_seed = self.env.seed
        self.env.seed = self._seed  # the batch's resets read env.seed; this view may have its own
        try:
            with _only_environment(self.env, self.index):
                self.env.reset()
        finally:
            self.env.seed = batch_seed
        in_game = self._in_game()
        self.agents = [name for name in self.possible_agents if in_game[self._agent_ids[name]]]
        return self._observations(self.agents), {name: {} for name in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, float],
                                                     dict[str, bool], dict[str, bool], dict[str, dict]]:
        """One step of this environment. ``actions`` maps every live agent (``agents``) to an
        action of its ``action_space``; actions of agents that already left are ignored."""
        if not self.agents:
            raise RuntimeError("no live agents: call reset() before the first step and after an episode ends")
        acting = list(self.agents)
        self.env.actions[self.index].copy_(torch.from_numpy(self._action_rows(actions)))
        with _only_environment(self.env, self.index):
            self.env.step(auto_reset=False)
        ended = bool(self.env.done[self.index])
        ended_by_rules = bool(self.env.terminated[self.index])
        in_game = self._in_game()
        terminations, truncations = {}, {}
        for name in acting:
            left = not in_game[self._agent_ids[name]]
            terminations[name] = left or ended_by_rules
            truncations[name] = ended and not terminations[name]
        rewards = self.env.rewards[self.index].cpu().numpy()
        self.agents = [] if ended else [name for name in acting if not terminations[name]]
        return (self._observations(acting), {name: float(rewards[self._agent_ids[name]]) for name in acting},
                terminations, truncations, {name: {} for name in acting})

    def render(self) -> np.ndarray:
        """uint8[H, W, 3]: the agents of this environment, coloured by role (out of the game: faded)."""
        if self.render_mode != "rgb_array":
            raise InvalidValueError(f"render() draws with render_mode='rgb_array'; this view has "
                             f"render_mode={self.render_mode!r} (give it when making the view)")
        if self._canvas is None:
            self._canvas = FrameCanvas(self.env.spec, self.env.display_name)
        return self._canvas.draw(self.env.frame(self.index))

    def close(self) -> None:
        self._canvas = None

    def _checked_name(self, agent: str) -> str:
        if agent not in self._agent_ids:
            raise KeyError(f"unknown agent {agent!r}; agents: {', '.join(self.possible_agents)}")
        return agent

    def _action_rows(self, actions: dict[str, Any]) -> np.ndarray:
        """[N, A]: the actions of the live agents; for the rest 0 ('no change' or 'stay'), within the bounds of
        continuous actions."""
        unknown = [name for name in actions if name not in self._agent_ids]
        if unknown:
            raise InvalidValueError(f"actions for unknown agent(s) {', '.join(map(repr, unknown))}; "
                             f"agents: {', '.join(self.possible_agents)}")
        missing = [name for name in self.agents if name not in actions]
        if missing:
            raise InvalidValueError(f"no action for live agent(s) {', '.join(missing)}; give one for every agent "
                             f"in agents")
        spec = self.env.spec
        if spec.continuous:
            low, high = action_limits(spec).numpy()
            rows = np.clip(0, low, high).astype(np.float32)
        else:
            rows = np.zeros((self.env.num_agents, spec.action_size), np.int32)
        for name in self.agents:
            space = self._action_spaces[name]
            if not space.contains(actions[name]):
                raise InvalidValueError(f"action {actions[name]!r} of agent {name} is not in its action space {space}")
            action = np.asarray(actions[name]).reshape(-1)
            rows[self._agent_ids[name], :len(action)] = action
        return rows

    def _observations(self, names: list[str]) -> dict[str, np.ndarray]:
        # a copy: the next step overwrites the environment's buffer in place; float32, as the
        # observation spaces say (bfloat16 observations convert exactly)
        rows = self.env.observations[self.index].float().cpu().numpy().copy()
        return {name: rows[self._agent_ids[name], :self._observation_spaces[name].shape[0]] for name in names}

    def _in_game(self) -> np.ndarray:
        """bool[N]: the agents still in the game, as the environment's frame() shows them."""
        if type(self.env).frame is Environment.frame:
            return np.ones(self.env.num_agents, bool)
        return np.asarray(self.env.frame(self.index).active, bool)


def parallel_envs(env: Environment, render_mode: str | None = None) -> list[WarpsimParallelEnv]:
    """Every environment of the batch ``env`` as its own ParallelEnv (index 0 .. E-1).

    Each steps and resets on its own (see the module docstring for what that costs).
    """
    return [WarpsimParallelEnv(env, index, render_mode) for index in range(env.num_envs)]


def parallel_env(env_id: str | type[Environment], render_mode: str | None = None,
                 backend: str = "numpy", **params) -> WarpsimParallelEnv:
    """A one-environment batch of ``env_id`` as a ParallelEnv; ``params`` go to ``warpsim.make``
    (the environment's parameters and ``seed``, ``device``, ``checked``)."""
    return WarpsimParallelEnv(make(env_id, 1, backend=backend, **params), 0, render_mode)


@contextmanager
def _only_environment(env: Environment, index: int) -> Iterator[None]:
    """Runs a batch-wide step or reset so that only environment ``index`` changes: the other
    environments' rows of every per-environment array are saved and put back afterwards."""
    if env.num_envs == 1:
        yield
        return
    arrays = _per_environment_arrays(env)
    saved = [array.clone() for array, _ in arrays]
    others = torch.tensor([e for e in range(env.num_envs) if e != index], dtype=torch.long, device=env.device)
    try:
        yield
    finally:
        for (array, axis), copy in zip(arrays, saved):
            array.index_copy_(axis, others, copy.index_select(axis, others))


def _per_environment_arrays(env: Environment) -> list[tuple[torch.Tensor, int]]:
    """(tensor, axis of E) for every array that holds one slice per environment."""
    arrays = [(env.observations, 0), (env.rewards, 0), (env.done, 0), (env.terminated, 0), (env.state.episode, 0)]
    for declared in env.spec.state:
        if "E" in declared.dims:
            arrays.append((getattr(env.state, declared.name), declared.dims.index("E")))
    return arrays
