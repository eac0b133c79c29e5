"""tag_continuous: taggers chase runners in a continuous square arena."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import torch

from warpsim.environment import EnvSpec, Environment, Frame, StateArray
from warpsim.envs.tag_continuous import reference
from warpsim.envs.tag_continuous.grid_search import observation_words_per_thread, staged_state_bytes
from warpsim.envs.tag_continuous.nearest import KEYS_PER_CHUNK
from warpsim.envs.tag_continuous.params import TWO_PI, Constants, TagContinuousParams
from warpsim.envs.tag_continuous.step_kernels import StepKernels, step_kernels
from warpsim.kernels.chunks import pairwise_entries
from warpsim.kernels.grid_layout import GridLayout, agents_per_cell
from warpsim.spec import host_points

TAGGER, RUNNER = 1, 0
GRID_SEARCH_MIN_AGENTS = 128
"""With neighbour_search="auto", partial observations search a grid from this N on and every
pair below it. Provisional: to be set from sweep-N on a GPU (docs/design.md)."""
GRID_SEARCH_MIN_TAGGERS = 32
"""With neighbour_search="auto", runners search a grid of the taggers from this many taggers
on (if the grid fits in shared memory). Provisional, as GRID_SEARCH_MIN_AGENTS."""


class TagContinuous(Environment):
    """docs/tag_rules.md section 1. Agents 0..num_taggers-1 are taggers (type 1), the rest runners.

    Actions int32[E, N, 2]: acceleration index in [0, num_acceleration_levels] and turn
    index in [0, num_turn_levels] (0 is 'no change').
    """

    name = "tag_continuous"
    Params = TagContinuousParams
    counts_resets = True
    resets_in_step = True

    def describe(self) -> EnvSpec:
        p = self.params
        per_agent = ("E", "N")
        length = float(np.float32(p.grid_length))
        top_speed = float(np.float32(p.max_speed * max(p.skill_level_tagger, p.skill_level_runner)))
        return EnvSpec(
            num_agents=p.num_agents,
            observation_size=p.observation_size,
            action_levels=() if p.continuous_actions else (p.num_acceleration_levels + 1, p.num_turn_levels + 1),
            action_bounds=(((p.min_acceleration, p.max_acceleration), (p.min_turn, p.max_turn))
                           if p.continuous_actions else ()),
            state=(
                StateArray("loc_x", np.float32, per_agent, "x position in [0, L]", (0.0, length)),
                StateArray("loc_y", np.float32, per_agent, "y position in [0, L]", (0.0, length)),
                StateArray("speed", np.float32, per_agent, "speed in [0, max_speed * skill]", (0.0, top_speed)),
                StateArray("direction", np.float32, per_agent, "heading in [0, 2pi)", (0.0, float(TWO_PI))),
                # The step zeroes an acceleration that takes the speed past 0 or its cap.
                StateArray("acceleration", np.float32, per_agent, "current acceleration",
                           (-2 * top_speed, 2 * top_speed)),
                StateArray("still_in_game", np.int32, per_agent, "1 while in the game, else 0", (0, 1)),
                StateArray("agent_type", np.int32, ("N",), "1 tagger, 0 runner", (0, 1)),
                StateArray("num_runners_left", np.int32, ("E",), "runners still in the game", (0, p.num_runners)),
                StateArray("t", np.int32, ("E",), "steps since the reset", (0, p.episode_length)),
                StateArray("tags", np.int32, ("E",), "runners tagged since the environment was made"),
            ),
            role_names=("runner", "tagger"),
            agent_roles=tuple(TAGGER if i < p.num_taggers else RUNNER for i in range(p.num_agents)),
            counters=("tags",),
            write_order=("t", "acceleration", "direction", "speed", "loc_x", "loc_y", "observations", "rewards",
                         "still_in_game", "num_runners_left", "tags", "done", "episode"),
            observation_label=("full" if p.use_full_observation else f"partial K={p.num_other_agents_observed}")
            + (" + own state" if p.observe_own_state else "")
            + (" in bfloat16" if p.observation_dtype == "bfloat16" else ""),
            # Partial: every agent measures all N for its K nearest; always: every runner its nearest tagger.
            distance_evaluations_per_step=(0 if p.use_full_observation else p.num_agents ** 2)
            + p.num_runners * p.num_taggers,
            scratch=self._observation_grid.scratch("grid"),
            observation_dtype=p.observation_dtype,
        )

    @functools.cached_property
    def _observation_grid(self) -> GridLayout:
        """The grid of the partial observations' search: about agents_per_cell(K) agents a cell, or one
        cell of every agent where every pair is searched. Full observations search nothing: one agent."""
        p = self.params
        if p.use_full_observation:
            return GridLayout(1, 1)
        per_cell = p.num_agents
        if self._use_grid(p.num_agents, GRID_SEARCH_MIN_AGENTS):
            per_cell = agents_per_cell(p.num_other_agents_observed)
        return GridLayout(p.num_agents, per_cell,
                          words_per_thread=observation_words_per_thread(p.num_other_agents_observed))

    @functools.cached_property
    def _tagger_grid(self) -> GridLayout:
        """The grid of the taggers for the tag: a cell of every tagger where every pair is searched."""
        p = self.params
        per_cell = agents_per_cell(1) if self._use_grid(p.num_taggers, GRID_SEARCH_MIN_TAGGERS) else p.num_taggers
        return GridLayout(p.num_taggers, per_cell)

    def _use_grid(self, size: int, threshold: int) -> bool:
        choice = self.params.neighbour_search
        return choice in ("grid", "grid_tiles") or (choice == "auto" and size >= threshold)

    @functools.cached_property
    def _kernels(self) -> StepKernels:
        p = self.params
        num_observed = 0 if p.use_full_observation else p.num_other_agents_observed
        return step_kernels(num_observed, self._observation_grid.in_shared, self._tagger_grid.in_shared,
                            p.neighbour_search == "grid_tiles", self._state_in_shared, p.continuous_actions)

    @functools.cached_property
    def _state_in_shared(self) -> bool:
        """Whether the partial observations read the state staged in shared memory after their grid."""
        return (not self.params.use_full_observation
                and self._observation_grid.fits_in_shared_with(staged_state_bytes(self.params.num_agents)))

    @functools.cached_property
    def _shared_bytes(self) -> int:
        """Dynamic shared memory of a launch: the observation's grid and the tag's take turns."""
        observing = 0 if self.params.use_full_observation else self._observation_grid.shared_bytes
        if self._state_in_shared:
            observing = self._observation_grid.shared_bytes_with(staged_state_bytes(self.params.num_agents))
        tagging = self._tagger_grid.shared_bytes if self._tagger_grid.in_shared else 0
        return max(observing, tagging)

    def setup(self) -> None:
        self.constants = Constants.of(self.params)
        self.state.agent_type.copy_(self.state.agent_type.new_tensor(self.spec.agent_roles))
        self.add_constants(**dataclasses.asdict(self.constants),
                           **self._observation_grid.kernel_constants("observation_grid"),
                           **self._tagger_grid.kernel_constants("tagger_grid"))

    def frame(self, env_index: int) -> Frame:
        s = self.state
        return Frame(host_points(s.loc_x, s.loc_y, env_index), s.still_in_game[env_index].cpu().numpy() == 1,
                     self.params.grid_length, int(s.t[env_index]), headings=s.direction[env_index].cpu().numpy())

    def game_over(self) -> torch.Tensor:
        """bool[E]: every runner has been tagged out (only when tagged runners leave)."""
        return self.state.num_runners_left == 0

    def workspace_bytes(self) -> int:
        """The NumPy reference's pairwise temporaries: a chunk of environments x N x N
        entries, at least one environment's, of some 64 bytes each (full observations);
        or 24 bytes each of the K-nearest search's keys and a copy of the observations."""
        if self.backend != "numpy":
            return 0
        n = self.num_agents
        if self.params.use_full_observation:
            return 64 * pairwise_entries(self.num_envs, n, n)
        return 24 * max(n * n, KEYS_PER_CHUNK) + 4 * self.num_envs * n * self.spec.observation_size

    def reset_numpy(self, envs: np.ndarray) -> None:
        reference.reset(self.views, self.params, self.constants, self.seed, envs)

    def step_numpy(self) -> None:
        reference.step(self.views, self.params, self.constants)

    def reset_cuda(self, mask) -> None:
        self.run(self._kernels.reset, per="block", mask=mask, shared_bytes=self._shared_bytes)

    def step_cuda(self) -> None:
        self.run(self._kernels.step, per="block", mask=self.auto_reset_mask, shared_bytes=self._shared_bytes)
