"""Plays policies in an environment and reports per-episode means of what happened: ``Player``
for one way of playing, ``BatchedPlayer`` for several side by side, each as alone, and
``evaluate`` / ``evaluate_plays`` for their ``Evaluation``.

``evaluate(Player(env, trainer.run_policies()), episodes)`` plays policies in hand; runs and
experiments are evaluated through these (``warpsim.analysis.evaluate``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from warpsim.actions import RandomActions
from warpsim.environment import Environment
from warpsim.errors import InvalidValueError
from warpsim.roles import Role, roles_of
from warpsim.train.episodes import EpisodeStats
from warpsim.train.policy import RolePolicies
from warpsim.train.run_policies import StackedActorCritic
from warpsim.train.stacking import ObservationStack

READ_EVERY = 32
"""Steps between reads of the finished-episode count (each read synchronises once)."""


@dataclass(frozen=True)
class Evaluation:
    """Per-episode means over ``episodes`` finished episodes."""

    env: str
    episodes: int
    steps: int
    returns: dict = field(default_factory=dict)
    """Mean episode return of each role's agents, by role name."""
    counters: dict = field(default_factory=dict)
    """Events per episode of each of the environment's counters (e.g. tags)."""
    random_roles: tuple[str, ...] = ()
    episode_length: float = math.nan
    """Mean steps until an episode ended."""
    terminated_fraction: float = math.nan
    """Share of the episodes that their rules ended (the others were cut by a time limit)."""
    first_event: dict = field(default_factory=dict)
    """Mean step of each counter's first event in an episode (its length when none came)."""
    last_event: dict = field(default_factory=dict)
    """Mean step of each counter's last event in an episode (its length when none came)."""
    means: dict = field(default_factory=dict)
    """Every per-episode mean by its metrics.jsonl name (e.g. tags_per_episode, episode_length)."""
    baseline: Evaluation | None = None
    """The same episodes played uniformly at random by every role, when asked for."""

    def ratios(self) -> dict:
        """Each measure divided by the baseline's: counters per episode, then episode length and
        event times (below 1 when the episodes end or the events come sooner than at random;
        1 where both are equal, 0 included)."""
        if self.baseline is None:
            raise InvalidValueError("this evaluation has no baseline; evaluate with compare_random=True")
        pairs = {f"{name} per episode": (value, self.baseline.counters[name]) for name, value in self.counters.items()}
        pairs["episode length"] = (self.episode_length, self.baseline.episode_length)
        for name, value in self.first_event.items():
            pairs[f"steps to the first {name[:-1] if name.endswith('s') else name}"] = (
                value, self.baseline.first_event[name])
        for name, value in self.last_event.items():
            pairs[f"steps to the last {name[:-1] if name.endswith('s') else name}"] = (
                value, self.baseline.last_event[name])
        return {label: (1.0 if mine == theirs else mine / theirs if theirs else math.inf)
                for label, (mine, theirs) in pairs.items()}

    def figure_lines(self) -> list[str]:
        """The per-episode means, one indented line each."""
        lines = []
        for role, value in self.returns.items():
            how = "uniformly random" if role in self.random_roles else "policy"
            lines.append(f"  mean return of {article(role)} {role} ({how}): {value:.3f}")
        for name, value in self.counters.items():
            lines.append(f"  {name} per episode: {value:.3f}")
        lines.append(f"  episode length: {self.episode_length:.1f} steps "
                     f"({100 * self.terminated_fraction:.0f}% ended by the rules)")
        for name in self.first_event:
            lines.append(f"  steps to the first / last of the {name}: {self.first_event[name]:.1f} / "
                         f"{self.last_event[name]:.1f}")
        return lines

    def ratio_lines(self) -> list[str]:
        return [f"  {label}: {ratio:.2f}x" for label, ratio in self.ratios().items()]

    def record(self) -> dict:
        """Every figure, for a JSON file (``ratios_to_random`` when there is a baseline)."""
        record = {"episodes": self.episodes, "steps": self.steps, "random_roles": list(self.random_roles),
                  "returns": self.returns, "counters_per_episode": self.counters,
                  "episode_length": self.episode_length, "terminated_fraction": self.terminated_fraction,
                  "steps_to_first_event": self.first_event, "steps_to_last_event": self.last_event,
                  "means": self.means}
        if self.baseline is not None:
            record["ratios_to_random"] = self.ratios()
        return record

    def __str__(self) -> str:
        lines = [f"{self.env}: {self.episodes} episodes ({self.steps} steps of every environment)",
                 *self.figure_lines()]
        if self.baseline is not None:
            lines += ["uniformly random play on the same seeds:", *self.baseline.figure_lines(),
                      "ratios to random play:", *self.ratio_lines()]
        return "\n".join(lines)


def article(noun: str) -> str:
    """"an" before a vowel (an evader), "a" otherwise (a tagger)."""
    return "an" if noun[:1].lower() in "aeiou" else "a"


@dataclass(frozen=True)
class Play:
    """One way of playing an environment: ``policies`` act for every role but ``random_roles``,
    greedily (their most likely actions) or sampling; without policies every role acts uniformly
    at random."""

    policies: RolePolicies | None
    greedy: bool = True
    random_roles: tuple[str, ...] = ()

    def acts_at_random(self, role: str) -> bool:
        return self.policies is None or role in self.random_roles


class BatchedPlayer:
    """Plays ``plays`` side by side, each in its own block of ``env``'s environments: play p acts in
    environments [p B, (p + 1) B), B = num_envs / len(plays), and its roles' networks run stacked
    with the other plays' (one batched product per layer). Each play draws from a generator of its
    own seeded ``seed``, in the order it would alone, so in an environment made with ``streams=B``
    the first E environments of every block (``envs_per_play``, E <= B; the others fill the block
    to the power of two that streams take, and count for nothing) step exactly as an environment
    of E of its own would (``Player``). ``stack_observations`` must be the value the policies were
    trained with.
    """

    def __init__(self, env: Environment, plays: Sequence[Play], *, envs_per_play: int | None = None,
                 stack_observations: int = 1, seed: int = 0):
        self.env = env
        self.plays = list(plays)
        if not self.plays or env.num_envs % len(self.plays):
            raise InvalidValueError(f"{len(self.plays)} plays cannot share {env.num_envs} environments; give one "
                                    f"or more plays, a whole number of environments each")
        self.block = env.num_envs // len(self.plays)
        self.envs_per_play = self.block if envs_per_play is None else envs_per_play
        """The environments of each block whose episodes count."""
        if not 1 <= self.envs_per_play <= self.block:
            raise InvalidValueError(f"envs_per_play={envs_per_play!r} is not allowed; give 1 to {self.block}, the "
                                    f"environments of each play's block")
        self.roles = roles_of(env.spec, env.device)
        names = [role.name for role in self.roles]
        heads = {tuple((type(head), head.size) for head in play.policies.heads.values())
                 for play in self.plays if play.policies}
        if len(heads) > 1:
            raise InvalidValueError("plays side by side need policies with the same action head")
        for play in self.plays:
            unknown = sorted(set(play.random_roles) - set(names))
            if unknown:
                raise InvalidValueError(f"random roles {unknown} are not roles of {env.display_name}; its roles: "
                                        f"{', '.join(names)}")
            if play.policies is not None and play.policies.role_names != names:
                raise InvalidValueError(f"the policies are for roles {play.policies.role_names}, the environment "
                                        f"has {names}")
        self.heads = next((play.policies.heads for play in self.plays if play.policies), {})
        """Each role's action head, by role name (every play's alike)."""
        self.plays_of = {role.name: self._plays_of(role.name) for role in self.roles}
        """Per role, its plays by kind: ``acting`` (its policy acts), ``random``, ``sampled`` and ``greedy`` (acting
        plays), and the positions of the last two among ``acting`` (``sampled_at``, ``greedy_at``)."""
        self.networks = {name: StackedActorCritic([self._policies(p).network(name) for p in kinds["acting"]]).to(
            env.device).eval() for name, kinds in self.plays_of.items() if kinds["acting"]}
        """Per role that a policy plays, the networks of its acting plays, stacked in their order."""
        self.indices = {role: {kind: torch.tensor(plays, dtype=torch.int64, device=env.device)
                               for kind, plays in kinds.items()} for role, kinds in self.plays_of.items()}
        """``plays_of`` as index tensors, made once: a list that indexes a tensor is copied to the device."""
        self.generators = [torch.Generator(env.device).manual_seed(seed) for _ in self.plays]
        self.inputs = ObservationStack(env, stack_observations)
        self.random_actions = RandomActions(env.spec, env.device)

    def _plays_of(self, role: str) -> dict[str, list[int]]:
        acting = [p for p, play in enumerate(self.plays) if not play.acts_at_random(role)]
        kinds = {"acting": acting, "random": [p for p in range(len(self.plays)) if p not in acting]}
        for kind, greedy in (("sampled", False), ("greedy", True)):
            chosen = [i for i, p in enumerate(acting) if self.plays[p].greedy == greedy]
            kinds[f"{kind}_at"], kinds[kind] = chosen, [acting[i] for i in chosen]
        return kinds

    def _policies(self, play: int) -> RolePolicies:
        policies = self.plays[play].policies
        assert policies is not None
        return policies

    def random_roles(self, play: int) -> tuple[str, ...]:
        """The roles that act uniformly at random in play ``play``."""
        return tuple(role.name for role in self.roles if self.plays[play].acts_at_random(role.name))

    def reset(self) -> None:
        self.env.reset()
        self.inputs.restart()

    @torch.no_grad()
    def step(self) -> None:
        """Acts in every play, steps the environment, and keeps the observation history."""
        inputs = self.inputs.advance()
        noise, random = self._draws()
        for role in self.roles:
            role.write(self.env.actions, self._role_actions(role, inputs, noise, random))
        self.env.step()
        self.inputs.stepped()

    def _draws(self) -> tuple[dict[tuple[int, str], tuple[torch.Tensor, ...]], dict[tuple[int, str], torch.Tensor]]:
        """By (play, role): the sampling noise of each role a policy samples for, and the actions of each
        role at random; each play's from its own generator in the order it draws them alone (the roles'
        noise, then the random roles' actions, role by role)."""
        noise, random = {}, {}
        for p, (play, generator) in enumerate(zip(self.plays, self.generators)):
            for role in self.roles:
                if not play.acts_at_random(role.name) and not play.greedy:
                    noise[p, role.name] = self.heads[role.name].noise(self.envs_per_play * role.count, generator,
                                                                      self.env.device)
            for role in self.roles:
                if play.acts_at_random(role.name):
                    random[p, role.name] = self.random_actions((self.envs_per_play, role.count), generator,
                                                               role.name)
        return noise, random

    def _role_actions(self, role: Role, inputs: torch.Tensor, noise: dict, random: dict) -> torch.Tensor:
        """The actions of ``role``'s agents in every play, [plays x B, count, A_r] as the environment takes them
        (A_r: the role's own components)."""
        plays, env, counted = len(self.plays), self.env, self.envs_per_play
        width = env.spec.action_size_of(role.name)
        actions = torch.empty(plays, self.block, role.count, width, dtype=env.actions.dtype, device=env.device)
        plays_of, indices = self.plays_of[role.name], self.indices[role.name]
        if plays_of["acting"]:
            head = self.heads[role.name]
            policy = self.networks[role.name].policy(
                role.observed(inputs, self.inputs.depth).reshape(plays, self.block, role.count, -1)[
                    indices["acting"], :counted].flatten(1, 2))
            for kind in ("sampled", "greedy"):  # the sampled plays at once, then the greedy ones
                chosen = plays_of[kind]
                if chosen:
                    draws = None if kind == "greedy" else tuple(torch.cat(parts) for parts in zip(
                        *(noise[p, role.name] for p in chosen)))
                    sampled = head.to_env(head.sample_with(policy[indices[f"{kind}_at"]].flatten(0, 1), draws))
                    actions[indices[kind], :counted] = sampled.view(len(chosen), counted, role.count, -1).to(
                        actions.dtype)
        if plays_of["random"]:
            actions[indices["random"], :counted] = torch.stack(
                [random[p, role.name][..., :width] for p in plays_of["random"]]).to(actions.dtype)
        if counted < self.block:  # the environments that fill a block act as its first: valid actions
            actions[:, counted:] = actions[:, :1]
        return actions.view(plays * self.block, role.count, -1)


class Player(BatchedPlayer):
    """Chooses every agent's actions and writes them into the environment's action buffer: one
    play over all of ``env``'s environments.

    Roles in ``random_roles`` (all of them when ``policies`` is None) act uniformly at
    random; the others follow their policy, greedily (most likely action) or sampling.
    """

    def __init__(self, env: Environment, policies: RolePolicies | None, *, greedy: bool = True,
                 random_roles: tuple[str, ...] = (), stack_observations: int = 1, seed: int = 0):
        super().__init__(env, [Play(policies, greedy, tuple(random_roles))], stack_observations=stack_observations,
                         seed=seed)


def evaluate(player: Player, episodes: int, max_steps: int = 1_000_000) -> Evaluation:
    """Plays from a reset until every environment has finished its first ceil(episodes / E)
    episodes (at least ``episodes`` in all); per-episode means over exactly those. Counting
    the same number in every environment keeps short episodes, which finish first, from
    weighing more than long ones."""
    if len(player.plays) != 1:
        raise InvalidValueError(f"the player has {len(player.plays)} plays; evaluate them with evaluate_plays")
    return evaluate_plays(player, episodes, max_steps)[0]


def evaluate_plays(player: BatchedPlayer, episodes: int, max_steps: int = 1_000_000) -> list[Evaluation]:
    """``evaluate`` of each of ``player``'s plays, each over its own block of environments, played
    together until the last has its episodes: each play's figures, and its steps, are those it
    gives alone."""
    if not isinstance(episodes, int) or episodes < 1:
        raise InvalidValueError(f"episodes={episodes!r} is not allowed; give an integer >= 1")
    env, plays = player.env, len(player.plays)
    player.reset()
    per_env = -(-episodes // player.envs_per_play)
    stats = EpisodeStats(env, player.roles, episodes_per_env=per_env, blocks=plays,
                         counted_per_block=player.envs_per_play)
    episodes = per_env * player.envs_per_play
    totals: list[dict] = [{} for _ in range(plays)]
    finished, ended_at, steps = [0] * plays, [0] * plays, 0
    while min(finished) < episodes:
        if steps >= max_steps:
            raise RuntimeError(f"only {min(finished)} of {episodes} episodes finished in {max_steps} steps")
        for _ in range(READ_EVERY):
            player.step()
            stats.record()
        steps += READ_EVERY
        for p, read in enumerate(stats.read_blocks()):
            if finished[p] >= episodes:
                continue
            for key, value in read.items():
                if key != "episodes" and read["episodes"]:
                    totals[p][key] = totals[p].get(key, 0.0) + value * read["episodes"]
            finished[p] += read["episodes"]
            ended_at[p] = steps
    return [_evaluation(env, player.roles, player.random_roles(p), finished[p], ended_at[p], totals[p])
            for p in range(plays)]


def _evaluation(env: Environment, roles: list, random_roles: tuple[str, ...], finished: int, steps: int,
                totals: dict) -> Evaluation:
    means = {key: total / finished for key, total in totals.items()}
    return Evaluation(
        env=env.display_name, episodes=finished, steps=steps,
        returns={role.name: means.get(f"return_{role.name}", math.nan) for role in roles},
        counters={name: means.get(f"{name}_per_episode", math.nan) for name in env.spec.counters},
        random_roles=random_roles, episode_length=means.get("episode_length", math.nan),
        terminated_fraction=means.get("terminated_fraction", math.nan),
        first_event={name: means.get(f"steps_to_first_{name}", math.nan) for name in env.spec.counters},
        last_event={name: means.get(f"steps_to_last_{name}", math.nan) for name in env.spec.counters},
        means=means)
