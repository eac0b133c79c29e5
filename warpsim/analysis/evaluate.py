"""Runs policies, or a run's, for a number of episodes and reports per-episode means.

From Python: ``warpsim.evaluate(run_dir)`` plays a run's policies sampled and greedily,
and every role at random, from the same starts (``evaluate_run``, a ``RunEvaluation``);
``evaluate(Player(env, trainer.policies), episodes)`` plays policies in hand.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from warpsim.actions import RandomActions
from warpsim.device import device_name
from warpsim.environment import Environment
from warpsim.errors import InvalidValueError, WarpsimError
from warpsim.files import write_output
from warpsim.registry import env_class, make
from warpsim.roles import roles_of
from warpsim.source_commit import source_commit
from warpsim.train import checkpoint, opponents
from warpsim.train.config import TrainConfig, saved_config
from warpsim.train.episodes import EpisodeStats
from warpsim.train.opponents import write_random_actions
from warpsim.train.policy import RolePolicies
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


class Player:
    """Chooses every agent's actions and writes them into the environment's action buffer.

    Roles in ``random_roles`` (all of them when ``policies`` is None) act uniformly at
    random; the others follow their policy, greedily (most likely action) or sampling.
    ``stack_observations`` must be the value the policies were trained with.
    """

    def __init__(self, env: Environment, policies: RolePolicies | None, *, greedy: bool = True,
                 random_roles: tuple[str, ...] = (), stack_observations: int = 1, seed: int = 0):
        self.env = env
        self.roles = roles_of(env.spec, env.device)
        names = [role.name for role in self.roles]
        unknown = sorted(set(random_roles) - set(names))
        if unknown:
            raise InvalidValueError(
                f"random roles {unknown} are not roles of {env.display_name}; its roles: {', '.join(names)}")
        if policies is not None and policies.role_names != names:
            raise InvalidValueError(f"the policies are for roles {policies.role_names}, the environment has {names}")
        self.random_roles = tuple(names) if policies is None else tuple(random_roles)
        self.random = [role for role in self.roles if role.name in self.random_roles]
        """The roles that act uniformly at random."""
        self.acting = [role for role in self.roles if role.name not in self.random_roles]
        """The roles that follow their policy (none when ``policies`` is None)."""
        self.policies = policies
        self.greedy = greedy
        self.inputs = ObservationStack(env, stack_observations)
        self.generator = torch.Generator(env.device).manual_seed(seed)
        self.random_actions = RandomActions(env.spec, env.device)

    def reset(self) -> None:
        self.env.reset()
        self.inputs.restart()

    @torch.no_grad()
    def step(self) -> None:
        """Acts, steps the environment, and keeps the observation history."""
        env, inputs = self.env, self.inputs.advance()
        if self.acting:
            assert self.policies is not None
            acted = self.policies.act([role.of(inputs).flatten(0, 1) for role in self.acting],
                                      [role.name for role in self.acting], self.generator, greedy=self.greedy)
            for role, (actions, _, _) in zip(self.acting, acted):
                role.write(env.actions, self.policies.head.to_env(actions).view(env.num_envs, role.count, -1))
        write_random_actions(self.random, env.actions, self.random_actions, self.generator)
        env.step()
        self.inputs.stepped()


def evaluate(player: Player, episodes: int, max_steps: int = 1_000_000) -> Evaluation:
    """Plays from a reset until every environment has finished its first ceil(episodes / E)
    episodes (at least ``episodes`` in all); per-episode means over exactly those. Counting
    the same number in every environment keeps short episodes, which finish first, from
    weighing more than long ones."""
    if not isinstance(episodes, int) or episodes < 1:
        raise InvalidValueError(f"episodes={episodes!r} is not allowed; give an integer >= 1")
    env = player.env
    player.reset()
    per_env = -(-episodes // env.num_envs)
    stats = EpisodeStats(env, player.roles, episodes_per_env=per_env)
    episodes = per_env * env.num_envs
    totals: dict = {}
    finished, steps = 0, 0
    while finished < episodes:
        if steps >= max_steps:
            raise RuntimeError(f"only {finished} of {episodes} episodes finished in {max_steps} steps")
        for _ in range(READ_EVERY):
            player.step()
            stats.record()
        steps += READ_EVERY
        read = stats.read()
        for key, value in read.items():
            if key != "episodes" and read["episodes"]:
                totals[key] = totals.get(key, 0.0) + value * read["episodes"]
        finished += read["episodes"]
    means = {key: total / finished for key, total in totals.items()}
    return Evaluation(
        env=env.display_name, episodes=finished, steps=steps,
        returns={role.name: means.get(f"return_{role.name}", math.nan) for role in player.roles},
        counters={name: means.get(f"{name}_per_episode", math.nan) for name in env.spec.counters},
        random_roles=player.random_roles, episode_length=means.get("episode_length", math.nan),
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
    policies = RolePolicies.for_config(config, env.spec, [role.name for role in roles_of(env.spec, env.device)],
                                       config.stack_observations * env.spec.observation_size).to(env.device)
    checkpoint.load_into(policies, saved["policies"], "networks", saved["path"])
    return env, policies.eval(), config


def _run_env(config: TrainConfig, num_envs: int, backend: str, seed: int, env_params: dict | None) -> Environment:
    return make(config.env, num_envs, backend=backend, seed=seed, checked=False,
                **{**config.env_params, **(env_params or {})})


EPISODES, NUM_ENVS, SEED = 200, 64, 1
"""How ``warpsim evaluate`` plays by default, and so random play wherever it is a baseline (``random_play``)."""


def random_play(config: TrainConfig, episodes: int = EPISODES, num_envs: int = NUM_ENVS, seed: int = SEED,
                backend: str = "auto", env_params: dict | None = None) -> Evaluation:
    """Every role of a run's environment (``config``) uniformly at random: the baseline of ``evaluate``'s
    ratios and of ``plot``'s dashed line, one definition for both, so that by default they agree."""
    env = _run_env(config, num_envs, backend, seed, env_params)
    return evaluate(Player(env, None, stack_observations=config.stack_observations, seed=seed), episodes)


class RandomPlays:
    """``random_play`` of each environment config asked for, played once: the runs of an experiment
    that share their environment share its random play, exactly the one each would play alone."""

    def __init__(self, episodes: int, num_envs: int, seed: int, backend: str, env_params: dict | None):
        self._settings = (episodes, num_envs, seed, backend, env_params)
        self._played: dict[str, Evaluation] = {}

    def __call__(self, config: TrainConfig) -> Evaluation:
        key = repr((config.env, config.env_params, config.stack_observations))
        if key not in self._played:
            self._played[key] = random_play(config, *self._settings)
        return self._played[key]


def evaluate_run(source: Path | str, episodes: int = EPISODES, *, num_envs: int = NUM_ENVS,
                 random_roles: tuple[str, ...] = (), plays: tuple[str, ...] = tuple(PLAYS),
                 compare_random: bool = True, seed: int = SEED, backend: str = "auto",
                 env_params: dict | None = None, random_plays: RandomPlays | None = None) -> RunEvaluation:
    """Plays a run's policies for ``episodes`` episodes in each way of ``plays``; per-episode means.

    The roles the run trained against random play (``opponents``) and ``random_roles`` act
    uniformly at random; the others sample their policy's actions ("sampled") or take the
    most likely one ("greedy"). ``compare_random`` also plays every role at random, once,
    as every play's baseline (``Evaluation.ratios()``). Each play runs on an environment of
    its own made with ``seed``, so all start alike: play that is all random anyway draws
    exactly what the baseline draws. ``random_plays`` keeps the baseline of runs evaluated
    before (an experiment's, ``evaluate_experiment``); by default it is played here.
    """
    episodes = require_int("episodes", episodes, 1)
    compare_random = require_bool("compare_random", compare_random)
    if not isinstance(plays, (tuple, list)) or not plays or not set(plays) <= set(PLAYS) \
            or len(set(plays)) != len(plays):
        raise not_allowed("plays", plays, f"give a tuple of one or more of {', '.join(map(repr, PLAYS))}, each once")
    env, policies, config = load_run(source, num_envs, backend=backend, seed=seed, env_params=env_params)
    roles = tuple(dict.fromkeys([*random_roles, *opponents.random_roles(config.opponents)]))
    results = {}
    for index, play in enumerate(plays):
        if index:  # a new environment starts as the first did: its episode numbers seed the starts
            env = _run_env(config, num_envs, backend, seed, env_params)
        results[play] = evaluate(Player(env, policies, greedy=play == "greedy", random_roles=roles,
                                        stack_observations=config.stack_observations, seed=seed), episodes)
    random_plays = random_plays or RandomPlays(episodes, num_envs, seed, backend, env_params)
    random = random_plays(config) if compare_random else None
    return RunEvaluation(
        source=str(source), config=config.to_dict(),
        settings={"episodes": episodes, "num_envs": env.num_envs, "seed": seed, "backend": env.backend,
                  "random_roles": list(roles), "env_params": dict(env_params or {})},
        plays={play: dataclasses.replace(result, baseline=random) for play, result in results.items()},
        random=random, device=device_name(env.placement), warpsim_commit=source_commit())
