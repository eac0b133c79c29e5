"""Evaluates runs: their policies played for a number of episodes, with per-episode means.

From Python: ``warpsim.evaluate(run_dir)`` plays a run's policies sampled and greedily,
and every role at random, from the same starts (``evaluate_run``, a ``RunEvaluation``);
``evaluate_runs`` plays many runs' plays side by side, each as alone (``warpsim.analysis.play``
plays policies in hand).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from warpsim.analysis.play import BatchedPlayer, Evaluation, Play, Player, evaluate, evaluate_plays
from warpsim.device import device_name
from warpsim.environment import Environment
from warpsim.errors import InvalidValueError, WarpsimError
from warpsim.files import write_output
from warpsim.registry import env_class, make
from warpsim.roles import roles_of
from warpsim.source_commit import source_commit
from warpsim.train import checkpoint, opponents
from warpsim.train.config import TrainConfig, saved_config
from warpsim.train.policy import RolePolicies
from warpsim.validation import not_allowed, require_bool, require_int

PLAYS = {"sampled": "each action drawn from the policy, as in training",
         "greedy": "the policy's most likely action"}
"""The ways ``evaluate_run`` plays a run's policies, with what each means."""


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
