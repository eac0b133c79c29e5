"""tag_gridworld: taggers chase one runner on a square grid of cells."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from warpsim.environment import EnvSpec, Environment, Frame, StateArray
from warpsim.envs.tag_gridworld import kernels, reference
from warpsim.envs.tag_gridworld.params import MOVE_X, MOVE_Y, NUM_ACTIONS, RUNNER, TAGGER, Constants, TagGridworldParams
from warpsim.spec import host_points


class TagGridworld(Environment):
    """docs/tag_rules.md section 2. Agents 0..num_taggers-1 are taggers (type 0); agent N-1 is the
    runner (type 1).

    Actions int32[E, N, 1]: 0 stay, 1 (+1, 0), 2 (-1, 0), 3 (0, +1), 4 (0, -1).
    """

    name = "tag_gridworld"
    Params = TagGridworldParams
    counts_resets = True

    def describe(self) -> EnvSpec:
        p = self.params
        per_agent = ("E", "N")
        return EnvSpec(
            num_agents=p.num_agents,
            observation_size=p.observation_size,
            action_levels=(NUM_ACTIONS,),
            state=(
                StateArray("loc_x", np.int32, per_agent, "x cell in [0, L]", (0, p.grid_length)),
                StateArray("loc_y", np.int32, per_agent, "y cell in [0, L]", (0, p.grid_length)),
                StateArray("agent_type", np.int32, ("N",), "0 tagger, 1 runner", (0, 1)),
                StateArray("t", np.int32, ("E",), "steps since the reset", (0, p.episode_length)),
                StateArray("tagged", np.bool_, ("E",), "the runner was tagged on the last step"),
                StateArray("tags", np.int32, ("E",), "times the runner was tagged since the environment was made"),
            ),
            role_names=("tagger", "runner"),
            agent_roles=tuple(TAGGER if i < p.num_taggers else RUNNER for i in range(p.num_agents)),
            counters=("tags",),
            write_order=("t", "loc_x", "loc_y", "tagged", "rewards", "tags", "done", "observations", "episode"),
            observation_label="full" if p.use_full_observation else "partial",
            distance_evaluations_per_step=0,  # cells are compared as integers
            scratch=(StateArray("distance_before", np.int32, ("E", p.num_taggers),
                                "each tagger's distance to the runner before the moves"),)
            if p.has_closing_reward else (),
        )

    def setup(self) -> None:
        self.constants = Constants.of(self.params)
        self.state.agent_type.copy_(self.state.agent_type.new_tensor(self.spec.agent_roles))
        self.add_constants(move_x=MOVE_X, move_y=MOVE_Y, **dataclasses.asdict(self.constants))

    def workspace_bytes(self) -> int:
        """The NumPy reference's temporaries: the N x N one-hot block of full observations,
        and per-agent arrays of some 64 bytes an agent, 32 more with a closing reward."""
        if self.backend != "numpy":
            return 0
        n = self.num_agents
        per_agent = 96 if self.params.has_closing_reward else 64
        return (4 * n * n if self.params.use_full_observation else 0) + per_agent * self.num_envs * n

    def frame(self, env_index: int) -> Frame:
        s = self.state
        return Frame(host_points(s.loc_x, s.loc_y, env_index).astype(np.float32), np.ones(self.num_agents, bool),
                     float(self.params.grid_length), int(s.t[env_index]))

    def game_over(self) -> torch.Tensor:
        """bool[E]: a tagger stands on the runner's cell (the runner is tagged)."""
        s, taggers = self.state, self.params.num_taggers
        on_runner = ((s.loc_x[:, :taggers] == s.loc_x[:, taggers:])
                     & (s.loc_y[:, :taggers] == s.loc_y[:, taggers:]))
        return on_runner.any(dim=1)

    def reset_numpy(self, envs: np.ndarray) -> None:
        reference.reset(self.views, self.params, self.constants, self.seed, envs)

    def step_numpy(self) -> None:
        reference.step(self.views, self.params, self.constants)

    def reset_cuda(self, mask) -> None:
        self.run(kernels.reset_agents, per="agent", mask=mask)
        self.run(kernels.reset_envs, per="env", mask=mask)
        self._observe(mask)

    def step_cuda(self) -> None:
        closing = self.params.has_closing_reward
        if closing:
            self.run(kernels.measure_runner_distance, per="agent")
        self.run(kernels.move_agents, per="agent")
        self.run(kernels.detect_tag, per="agent")
        self.run(kernels.add_outcome_rewards, per="agent")
        if closing:
            self.run(kernels.add_closing_rewards, per="agent")
        self.run(kernels.finish_step, per="env")
        self._observe(None)

    def _observe(self, mask) -> None:
        self.run(kernels.observe_full if self.params.use_full_observation else kernels.observe_partial,
                 per="agent", mask=mask)
