"""Runs policies, or a run's, for a number of episodes and reports per-episode means.

From Python: ``warpsim.evaluate(run_dir)`` plays a run's policies sampled and greedily,
and every role at random, from the same starts (``evaluate_run``, a ``RunEvaluation``);
``evaluate_runs`` plays many runs' plays side by side, each as alone;
``evaluate(Player(env, trainer.policies), episodes)`` plays policies in hand.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import torch

from warpsim.actions import RandomActions
from warpsim.device import device_name
from warpsim.environment import Environment
from warpsim.errors import InvalidValueError, WarpsimError
from warpsim.files import write_output
from warpsim.registry import env_class, make
from warpsim.roles import Role, roles_of
from warpsim.source_commit import source_commit
from warpsim.train import checkpoint, opponents
from warpsim.train.config import TrainConfig, saved_config
from warpsim.train.episodes import EpisodeStats
from warpsim.train.policy import RolePolicies, StackedActorCritic
from warpsim.train.stacking import ObservationStack
from warpsim.validation import not_allowed, require_bool, require_int

READ_EVERY = 32
"""Steps between reads of the finished-episode count (each read synchronises once)."""
PLAYS = {"sampled": "each action drawn from the policy, as in training",
         "greedy": "the policy's most likely action"}
"""The ways ``evaluate_run`` plays a run's policies, with what each means."""


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


@dataclass(frozen=True)
class RunEvaluation:
    """A run's policies played in each of ``plays``' ways and, when compared, every role at
    random, all from the same starts and seeds."""

    source: str
    config: dict
    """The run's config, as its config.json holds it."""
    settings: dict
    """This evaluation's episodes, num_envs, seed, backend, random_roles and env_params."""
    plays: dict
    """Evaluation by way of play (a key of ``PLAYS``); the random play is each one's baseline."""
    random: Evaluation | None
    """Every role uniformly at random (None when not compared)."""
    device: str
    warpsim_commit: dict | None
    """The commit of the warpsim checkout that ran, and whether it was clean (None outside one)."""

    def __str__(self) -> str:
        settings = self.settings
        lines = [f"{self.config['env']} from {self.source}: at least {settings['episodes']} episodes of each play, "
                 f"as many in each of {settings['num_envs']} environments, seed {settings['seed']}, "
                 f"{settings['backend']} backend"]
        for play, result in self.plays.items():
            lines += [f"{play} play ({PLAYS[play]}): {_counts(result)}", *result.figure_lines()]
            if result.baseline is not None:
                lines += ["  ratios to random play:", *("  " + line for line in result.ratio_lines())]
        if self.random is not None:
            lines += [f"uniformly random play (every role, the same seeds): {_counts(self.random)}",
                      *self.random.figure_lines()]
        return "\n".join(lines)

    def record(self) -> dict:
        """Every figure printed and what produced them, for a JSON file."""
        return {"env": self.config["env"], "source": self.source, "config": self.config, "settings": self.settings,
                "device": self.device, "warpsim_commit": self.warpsim_commit,
                "plays": {play: result.record() for play, result in self.plays.items()},
                "random": None if self.random is None else self.random.record()}

    def write_json(self, path: Path | str) -> Path:
        """Writes ``record()`` to ``path`` atomically; NaN and infinite figures become null
        (JSON has no such numbers)."""
        text = json.dumps(finite_or_none(self.record()), indent=1, allow_nan=False) + "\n"
        return write_output(path, text.encode(), "evaluation file")


def article(noun: str) -> str:
    """"an" before a vowel (an evader), "a" otherwise (a tagger)."""
    return "an" if noun[:1].lower() in "aeiou" else "a"


def _counts(result: Evaluation) -> str:
    return f"{result.episodes} episodes, {result.steps} steps of every environment"


def finite_or_none(value):
    """``value`` with NaN and infinite floats, at any depth, as None (JSON has no such numbers)."""
    if isinstance(value, dict):
        return {key: finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


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


def load_run(source: Path | str, num_envs: int = 64, *, backend: str = "auto", seed: int = 1,
             env_params: dict | None = None) -> tuple[Environment, RolePolicies, TrainConfig]:
    """A run's environment (``num_envs`` of them, ``env_params`` changing parameters that keep
    the shapes), its policies, in eval mode, and its config. ``source``: a run directory or a
    checkpoint file."""
    saved = checkpoint.load(source)
    config = saved_config(saved)
    try:
        env_class(config.env)
    except WarpsimError as error:
        raise InvalidValueError(f"checkpoint {saved['path']} is for environment {config.env!r}, which cannot be "
                                f"made here: {error}") from None
    env = _run_env(config, num_envs, backend, seed, env_params)
    checkpoint.check_compatible(saved, env, saved["path"])
    policies = RolePolicies.for_config(config, env.spec, [role.name for role in roles_of(env.spec, env.device)]).to(
        env.device)
    checkpoint.load_into(policies, saved["policies"], "networks", saved["path"])
    return env, policies.eval(), config


def _run_env(config: TrainConfig, num_envs: int, backend: str, seed: int, env_params: dict | None,
             plays: int = 1) -> Environment:
    """``num_envs`` of the run's environments; for several plays, ``plays`` blocks of ``block_size(num_envs)``,
    each drawing the random numbers the first draws (``streams``): each play starts and steps as alone."""
    params = {**config.env_params, **(env_params or {})}
    if plays == 1:
        return make(config.env, num_envs, backend=backend, seed=seed, checked=False, **params)
    block = block_size(num_envs)
    return make(config.env, plays * block, backend=backend, seed=seed, checked=False, streams=block, **params)


def block_size(num_envs: int) -> int:
    """The environments of a play's block: ``num_envs`` up to the power of two that shared streams take."""
    return 1 << (num_envs - 1).bit_length()


EPISODES, NUM_ENVS, SEED = 200, 64, 1
"""How ``warpsim evaluate`` plays by default, and so random play wherever it is a baseline (``random_play``)."""
BATCH_AGENTS = 2 ** 18
"""The most agents ``evaluate_runs`` plays in one environment; more plays wait for the next batch."""


def random_play(config: TrainConfig, episodes: int = EPISODES, num_envs: int = NUM_ENVS, seed: int = SEED,
                backend: str = "auto", env_params: dict | None = None) -> Evaluation:
    """Every role of a run's environment (``config``) uniformly at random: the baseline of ``evaluate``'s
    ratios and of ``plot``'s dashed line, one definition for both, so that by default they agree."""
    env = _run_env(config, num_envs, backend, seed, env_params)
    return evaluate(Player(env, None, stack_observations=config.stack_observations, seed=seed), episodes)


@dataclass(frozen=True)
class _LoadedRun:
    source: str
    policies: RolePolicies
    config: TrainConfig
    random_roles: tuple[str, ...]
    num_agents: int


def evaluate_run(source: Path | str, episodes: int = EPISODES, *, num_envs: int = NUM_ENVS,
                 random_roles: tuple[str, ...] = (), plays: tuple[str, ...] = tuple(PLAYS),
                 compare_random: bool = True, seed: int = SEED, backend: str = "auto",
                 env_params: dict | None = None) -> RunEvaluation:
    """Plays a run's policies for ``episodes`` episodes in each way of ``plays``; per-episode means.

    The roles the run trained against random play (``opponents``) and ``random_roles`` act
    uniformly at random; the others sample their policy's actions ("sampled") or take the
    most likely one ("greedy"). ``compare_random`` also plays every role at random, once,
    as every play's baseline (``Evaluation.ratios()``). Every play starts from the same
    starts with the same seed (``BatchedPlayer``), so play that is all random anyway draws
    exactly what the baseline draws.
    """
    return evaluate_runs([source], episodes, num_envs=num_envs, random_roles=random_roles, plays=plays,
                         compare_random=compare_random, seed=seed, backend=backend, env_params=env_params)[0]


def evaluate_runs(sources: Sequence[Path | str], episodes: int = EPISODES, *, num_envs: int = NUM_ENVS,
                  random_roles: tuple[str, ...] = (), plays: tuple[str, ...] = tuple(PLAYS),
                  compare_random: bool = True, seed: int = SEED, backend: str = "auto",
                  env_params: dict | None = None, progress: TextIO | None = None) -> list[RunEvaluation]:
    """``evaluate_run`` of every run of ``sources``, figure for figure, played together: the plays of the
    runs whose environment and networks share their shapes run side by side in one environment
    (``BatchedPlayer``, up to ``BATCH_AGENTS`` agents at a time), and random play once for the runs
    that share their environment. ``progress`` gets a line per batch."""
    episodes = require_int("episodes", episodes, 1)
    num_envs = require_int("num_envs", num_envs, 1)
    compare_random = require_bool("compare_random", compare_random)
    if not isinstance(plays, (tuple, list)) or not plays or not set(plays) <= set(PLAYS) \
            or len(set(plays)) != len(plays):
        raise not_allowed("plays", plays, f"give a tuple of one or more of {', '.join(map(repr, PLAYS))}, each once")
    runs = []
    for source in sources:
        env, policies, config = load_run(source, 1, backend=backend, seed=seed, env_params=env_params)
        roles = tuple(dict.fromkeys([*random_roles, *opponents.random_roles(config.opponents)]))
        runs.append(_LoadedRun(str(source), policies, config, roles, env.num_agents))
    played: dict[tuple, Evaluation] = {}
    """Each play's evaluation, by (run index, play); random play's by (None, its environment's key)."""
    placement = None
    for config, group in _batches(runs, plays, compare_random, num_envs):
        if progress is not None:
            named = sorted({runs[index].source for index, _ in group if index is not None})
            progress.write(f"playing {len(group)} plays side by side in {len(group)} x {block_size(num_envs)} "
                           f"environments: "
                           f"{len(named)} runs{' and random play' if any(i is None for i, _ in group) else ''}\n")
        env = _run_env(config, num_envs, backend, seed, env_params, plays=len(group))
        placement = env.placement
        batch = [Play(None) if index is None else
                 Play(runs[index].policies, play == "greedy", runs[index].random_roles) for index, play in group]
        results = evaluate_plays(BatchedPlayer(env, batch, envs_per_play=num_envs,
                                               stack_observations=config.stack_observations, seed=seed), episodes)
        played.update(zip(group, results))
    assert placement is not None
    evaluations = []
    for index, run in enumerate(runs):
        random = played[None, _environment_key(run.config)] if compare_random else None
        evaluations.append(RunEvaluation(
            source=run.source, config=run.config.to_dict(),
            settings={"episodes": episodes, "num_envs": num_envs, "seed": seed, "backend": placement.backend,
                      "random_roles": list(run.random_roles), "env_params": dict(env_params or {})},
            plays={play: dataclasses.replace(played[index, play], baseline=random) for play in plays},
            random=random, device=device_name(placement), warpsim_commit=source_commit()))
    return evaluations


def _environment_key(config: TrainConfig) -> tuple:
    """What plays must share to play in one environment: the environment, its parameters and the inputs' depth."""
    return config.env, repr(sorted(config.env_params.items())), config.stack_observations


def _batches(runs: list[_LoadedRun], plays: tuple[str, ...], compare_random: bool,
             num_envs: int) -> list[tuple[TrainConfig, list[tuple]]]:
    """The plays to make, (run index, play) or (None, environment key) for random play, in batches that
    share their environment and networks' shapes, each of at most ``BATCH_AGENTS`` agents (one play at
    least), with the config of a run of the batch's environment."""
    groups: dict[tuple, tuple[_LoadedRun, list[tuple]]] = {}
    random_played = set()
    for index, run in enumerate(runs):
        environment = _environment_key(run.config)
        shapes = tuple((name, tuple(tensor.shape)) for name, tensor in run.policies.state_dict().items())
        heads = tuple(type(head) for head in run.policies.heads.values())
        _, group = groups.setdefault((environment, heads, shapes), (run, []))
        if compare_random and environment not in random_played:
            random_played.add(environment)
            group.append((None, environment))
        group.extend((index, play) for play in plays)
    batches = []
    for first, group in groups.values():
        size = max(1, BATCH_AGENTS // (block_size(num_envs) * first.num_agents))
        batches += [(first.config, group[start:start + size]) for start in range(0, len(group), size)]
    return batches
