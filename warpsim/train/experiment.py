"""An experiment: one config trained over several seeds, optionally crossed with a sweep.

    runs/<name>/experiment.json              the seeds, the sweep and every run's setting and status
    runs/<name>/<setting>seed=<S>/           one complete run directory per run (run_dir.py)

``--seeds 8`` means seeds 0 to 7, ``--seeds 3,5,9`` those three, ``--seeds 0-4`` 0 to 4.
``--sweep NAME=V1,V2`` (repeatable) takes the product of the values of every swept
setting, each crossed with the seeds. NAME is a config field or an environment
parameter. Every run's directory works with every command that takes a run.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from warpsim.errors import InvalidValueError, RunFileError, WarpsimError
from warpsim.files import make_directory, read_json, replace_atomically, usable_directory
from warpsim.registry import env_class
from warpsim.train.config import MAX_SEED, TrainConfig, build_config, field_names
from warpsim.train.run_dir import CONFIG_FILE, EXPERIMENT_FILE, RunDirectory, refuse_foreign
from warpsim.validation import shown

FORMAT = 1
MAX_RUNS = 4096
"""Most runs one experiment may plan: more is a slip of the seeds or the sweep."""


@dataclass(frozen=True)
class PlannedRun:
    """One run of an experiment."""

    name: str
    """Its directory's name inside the experiment's."""
    setting: dict
    """The swept settings' values by name (empty without a sweep)."""
    config: TrainConfig


def parse_seeds(text: str, where: str = "--seeds") -> tuple[int, ...]:
    """``N`` (seeds 0 to N-1), ``A-B`` (A to B) or ``A,B,C``; a one-line error naming ``where`` (the flag,
    or a config file's key) for anything else. Sizes are checked before anything is built."""
    text = text.strip()
    usage = "give a count (8: seeds 0-7), a range (0-4) or a list (3,5,9)"
    if re.fullmatch(r"[0-9]+", text):
        count = int(text)
        if not 1 <= count <= MAX_RUNS:
            raise InvalidValueError(f"{where} {shown(text)}: give between 1 and {MAX_RUNS} seeds; {usage}")
        return tuple(range(count))
    if match := re.fullmatch(r"([0-9]+)-([0-9]+)", text):
        low, high = int(match[1]), int(match[2])
        if low > high:
            raise InvalidValueError(f"{where} {shown(text)}: the range runs backwards; write {high}-{low}")
        if high - low + 1 > MAX_RUNS:
            raise InvalidValueError(f"{where} {shown(text)} makes {high - low + 1} seeds; at most {MAX_RUNS}")
        return check_seeds(tuple(range(low, high + 1)), where)
    if re.fullmatch(r"[0-9]+(,[0-9]+)+", text):
        return check_seeds(tuple(int(part) for part in text.split(",")), where)
    raise InvalidValueError(f"{where} {shown(text)} is not allowed; {usage}")


def check_seeds(seeds: object, where: str = "seeds") -> tuple[int, ...]:
    """An experiment's seeds: a non-empty tuple or list of at most MAX_RUNS distinct integers in [0,
    MAX_SEED] (NumPy integers too, returned as ints); a one-line error naming ``where`` otherwise."""
    example = "e.g. (0, 1, 2)"
    if not isinstance(seeds, (tuple, list)):
        raise InvalidValueError(f"{where}={shown(seeds)} is not allowed; give a tuple of integer seeds, {example}")
    if not 1 <= len(seeds) <= MAX_RUNS:
        raise InvalidValueError(f"{where} holds {len(seeds)} seeds; give between 1 and {MAX_RUNS}, {example}")
    for seed in seeds:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) \
                or not 0 <= seed <= MAX_SEED:
            raise InvalidValueError(f"{where}: seed {shown(seed)} is not allowed; give integers in [0, {MAX_SEED}]")
    checked = tuple(int(seed) for seed in seeds)
    repeated = sorted({seed for seed in checked if checked.count(seed) > 1})
    if repeated:
        raise InvalidValueError(f"{where}: seed {repeated[0]} is given twice; give each seed once")
    return checked


def parse_sweep(texts: list[str], env_id: str) -> dict[str, list]:
    """``NAME=V1,V2,...`` settings into their values by name, in the order given; NAME is a
    config field or a parameter of ``env_id``'s environment. Values are Python literals,
    true/false, none, or a bare word."""
    sweep: dict[str, list] = {}
    for text in texts:
        name, sep, values = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InvalidValueError(f"--sweep {text!r}: expected NAME=V1,V2,... e.g. learning_rate=3e-4,1e-3")
        if name in sweep:
            raise InvalidValueError(f"--sweep {text!r}: {name} is swept twice; give all its values in one --sweep")
        parts = [part.strip() for part in values.split(",")]
        if any(not part for part in parts):
            raise InvalidValueError(f"--sweep {text!r}: an empty value; give values separated by commas")
        sweep[name] = [_value(part) for part in parts]
    return check_sweep(sweep, env_id, "--sweep")


def check_sweep(sweep: object, env_id: str, where: str) -> dict[str, list]:
    """``sweep`` (values by setting name) checked: every name a config field or a parameter of
    ``env_id``'s environment, every list (or tuple) of values non-empty and without repeats; a
    one-line error naming ``where`` (the flag, a config file's table, the argument)."""
    if not isinstance(sweep, dict):
        raise InvalidValueError(f"{where}={shown(sweep)} is not allowed; give a mapping of setting names to lists of "
                                f"values, e.g. learning_rate = [3e-4, 1e-3]")
    env_params = {item.name for item in dataclasses.fields(env_class(env_id).Params)}
    for name, values in sweep.items():
        if name in ("seed", "env", "env_params", "opponents"):
            hint = ("give the seeds apart (--seeds, a config file's seeds, or seeds=)" if name == "seed"
                    else "sweep one setting at a time, e.g. an environment parameter")
            raise InvalidValueError(f"{where}: {name} cannot be swept; {hint}")
        if name not in field_names() and name not in env_params:
            raise InvalidValueError(f"{where}: {name!r} is neither a config field nor a parameter of {env_id}; "
                                    f"config fields: {', '.join(field_names())}")
        if not isinstance(values, (list, tuple)) or not values:
            raise InvalidValueError(f"{where}: {name} = {shown(values)}; give a non-empty list of values")
        if len({repr(value) for value in values}) != len(values):
            raise InvalidValueError(f"{where}: {name} = {shown(values)} gives a value twice; give each value once")
    return {name: list(values) for name, values in sweep.items()}


def seeds_from_file(value: object, where: str) -> tuple[int, ...]:
    """A config file's ``seeds`` (``where`` names the file and key): a count, a range or list as text, or a
    list of integers."""
    if isinstance(value, bool) or not isinstance(value, (int, str, list)):
        raise InvalidValueError(f"{where} = {shown(value)}; give a count (8), a text range ('0-4') or a list "
                                f"([3, 5, 9])")
    if isinstance(value, list):
        return check_seeds(value, where)
    return parse_seeds(str(value), where)


def _value(text: str):
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() == "none":
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def plan_runs(base: TrainConfig, seeds: tuple[int, ...], sweep: dict[str, list]) -> list[PlannedRun]:
    """Every run: each combination of the sweep's values (in the order given), crossed with the
    seeds. Every config is checked here, before anything is written."""
    fields = set(field_names())
    planned = math.prod(len(values) for values in sweep.values()) * len(seeds)
    if planned > MAX_RUNS:
        raise InvalidValueError(f"the seeds and the sweep make {planned} runs; at most {MAX_RUNS}")
    combinations = list(itertools.product(*sweep.values()))
    runs = []
    for values in combinations:
        setting = dict(zip(sweep, values))
        layer = {name: value for name, value in setting.items() if name in fields}
        layer["env_params"] = {name: value for name, value in setting.items() if name not in fields}
        for seed in seeds:
            try:
                config = build_config(base.to_dict(), layer, {"seed": seed})
            except InvalidValueError as error:
                raise InvalidValueError(f"the sweep's {_label(setting)}: {error}") from None
            runs.append(PlannedRun(run_name(setting, seed), setting, config))
    return runs


NAME_CHARACTERS = "A-Za-z0-9_.=+-"
"""The characters of a run's directory name: one folder inside the experiment's, on any file system."""


def run_name(setting: dict, seed: int) -> str:
    """A run's directory name: its swept values and its seed, e.g. ``learning_rate=0.001_seed=3``."""
    parts = [f"{name}={value}" for name, value in setting.items()] + [f"seed={seed}"]
    return re.sub(f"[^{NAME_CHARACTERS}]", "-", "_".join(parts))


def setting_label(setting: dict) -> str:
    """How a setting is printed: ``learning_rate=0.001, entropy_coef=0`` (``all runs`` without a sweep)."""
    return _label(setting) or "all runs"


def _label(setting: dict) -> str:
    return ", ".join(f"{name}={value}" for name, value in setting.items())


def is_experiment(path: Path | str) -> bool:
    """Whether ``path`` is an experiment's directory."""
    return (Path(path) / EXPERIMENT_FILE).is_file()


class ExperimentDirectory:
    """Checks an experiment's directory before anything is written; writes and reads its plan and statuses."""

    def __init__(self, path: Path | str, *, resume: bool):
        self.path = usable_directory(path, "experiment directory")
        self.file = self.path / EXPERIMENT_FILE
        if resume and not self.file.is_file():
            raise RunFileError(f"--resume: {self.path} holds no {EXPERIMENT_FILE}, so no experiment to continue")
        if not resume and (self.file.exists() or (self.path / CONFIG_FILE).exists()):
            what = "an experiment" if self.file.exists() else "a run"
            raise RunFileError(f"{self.path} already holds {what}; continue it with --resume, or choose another "
                               f"directory (nothing was written)")
        if not resume:
            refuse_foreign(self.path, "experiment directory")

    def create(self, base: TrainConfig, seeds: tuple[int, ...], sweep: dict, runs: list[PlannedRun]) -> None:
        """Writes the plan (atomically): from then on the directory holds an experiment."""
        make_directory(self.path, "experiment directory")
        self._write({"format": FORMAT, "config": base.to_dict(), "seeds": list(seeds), "sweep": sweep,
                     "runs": [{"name": run.name, "setting": run.setting, "seed": run.config.seed, "diverged_at": None}
                              for run in runs]})

    def read(self) -> dict:
        """The plan as written, checked; a RunFileError naming the file when it cannot be used."""
        plan = read_json(self.file, "an experiment")
        if not isinstance(plan, dict) or plan.get("format") != FORMAT or not isinstance(plan.get("runs"), list) \
                or not all(isinstance(run, dict) and {"name", "setting", "seed"} <= set(run) for run in plan["runs"]):
            raise RunFileError(f"{self.file} is not a warpsim experiment of format {FORMAT}")
        names = [run["name"] for run in plan["runs"]]
        if not names:
            raise RunFileError(f"{self.file} lists no runs; an experiment has at least one (train a new one with "
                               f"--seeds)")
        for name in names:
            if not isinstance(name, str) or not re.fullmatch(f"[{NAME_CHARACTERS}]+", name) or name in (".", ".."):
                raise RunFileError(f"{self.file} names a run {name!r}; a run's name is one folder inside the "
                                   f"experiment's, of letters, digits and _.=+- (e.g. seed=0)")
            if names.count(name) > 1:
                raise RunFileError(f"{self.file} lists the run {name!r} twice; each run is listed once")
            if (self.path / name).exists() and not (self.path / name).is_dir():
                raise RunFileError(f"{self.file} lists the run {name!r}, but {self.path / name} is a file, not a "
                                   f"run directory")
        return plan

    def planned_runs(self) -> list[PlannedRun]:
        """The runs of the plan, each with the config its directory holds (or the plan's, before it started)."""
        plan = self.read()
        try:
            base = build_config(plan["config"])
        except (WarpsimError, TypeError) as error:
            raise RunFileError(f"{self.file}: its config cannot be used: {error}") from None
        runs = []
        for run in plan["runs"]:
            saved = self.path / run["name"] / CONFIG_FILE
            if saved.is_file():
                config = RunDirectory(saved.parent, resume=True).saved_config()
            else:
                config = plan_runs(base, (run["seed"],), {name: [value] for name, value in run["setting"].items()})[
                    0].config
            runs.append(PlannedRun(run["name"], run["setting"], config))
        return runs

    def diverged(self) -> dict[str, int]:
        """The runs that diverged, by name: the iteration by which their loss became NaN or infinite."""
        return {run["name"]: run["diverged_at"] for run in self.read()["runs"] if run.get("diverged_at") is not None}

    def mark_diverged(self, name: str, iteration: int) -> None:
        plan = self.read()
        for run in plan["runs"]:
            if run["name"] == name:
                run["diverged_at"] = iteration
        self._write(plan)

    def _write(self, plan: dict) -> None:
        replace_atomically(self.file, (json.dumps(plan, indent=1) + "\n").encode(), "experiment file")
