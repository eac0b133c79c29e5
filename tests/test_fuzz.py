"""Property-based fuzzing of make (ids, package.module:Class with broken user modules, devices),
step (actions of every NumPy integer dtype), reset(mask), state writes, every TrainConfig field
and every subcommand of the command line.

Every generated input either works, with finite outputs, or raises a WarpsimError whose
message names what was wrong; never another exception, never a hang. The examples are
derandomized (the same ones on every run) and bounded, so the file runs in well under a
minute. ``pytest -s tests/test_fuzz.py`` prints how many inputs were tried and how they ended.
"""

import collections
import contextlib
import dataclasses
import json
import math
import os
import signal
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import cuda

import warpsim
from warpsim.cli import main
from warpsim.envs.template import Beacon
from warpsim.errors import WarpsimError
from warpsim.kernels.indexing import agent_of_thread
from warpsim.registry import env_class
from warpsim.train import TrainConfig
from warpsim.train.config import build_config

TALLY: collections.Counter = collections.Counter()
EXAMPLE_SECONDS = 30
"""An example running longer is a hang."""

FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.filter_too_much, HealthCheck.data_too_large])

NUMBERS = st.one_of(
    st.integers(-2, 6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(0, 1),
    st.sampled_from([2**31, 2**40, 10**30, 1e300, 5e-324, -0.0, 1e-40, 3.5e38, 1e9, 1e-9, -1e9]),
)
ODD = st.sampled_from([None, "3", "", True, False, [1], {"a": 1}, b"x", 2 + 1j])
VALUES = st.one_of(NUMBERS, ODD)
ENVS = ["tag_continuous", "tag_gridworld", Beacon]
DEVICE_STRINGS = ["cuda:01", "cuda:00", "cuda:128", "cuda:99999999999999999999", "cuda:-1", "cuda:1.0", "cuda: 1",
                  "cpu:0", "CUDA", "", "meta", "auto", "cuda", "cuda:0", "cuda:127", np.str_("cpu")]


@contextlib.contextmanager
def time_limit(seconds: int):
    def hang(signum, frame):
        raise TimeoutError(f"an example ran past {seconds} s: a hang")
    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def expect_clear_error(error: WarpsimError, names) -> None:
    message = str(error)
    assert "\n" not in message.strip(), f"a multi-line message: {message!r}"
    assert any(str(name) in message for name in names), f"{message!r} names none of {names}"
    TALLY["clear errors"] += 1


def assert_finite(env) -> None:
    assert torch.isfinite(env.observations).all(), "non-finite observations from accepted input"
    assert torch.isfinite(env.rewards).all(), "non-finite rewards from accepted input"
    assert env.done.dtype == torch.bool


def plausible(default):
    """Values near a parameter's default: most of them valid."""
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, int):
        return st.integers(max(0, default - 3), default + 3) if default < 50 else st.integers(1, 8)
    if isinstance(default, float) and default != 0:
        low, high = sorted((default / 4, default * 4))
        return st.floats(low, high)
    return st.floats(-1, 1)


@st.composite
def make_calls(draw):
    env = draw(st.sampled_from(ENVS))
    fields = [field.name for field in dataclasses.fields(env_class(env).Params)]
    defaults = {field.name: field.default for field in dataclasses.fields(env_class(env).Params)}
    chosen = draw(st.lists(st.sampled_from(fields * 6 + ["bogus"]), unique=True, max_size=4))
    params = {name: draw(VALUES if draw(st.integers(0, 7)) == 0 else plausible(defaults.get(name)))
              for name in chosen}
    options = draw(st.fixed_dictionaries({}, optional={
        "backend": st.sampled_from(["numpy", "numpy", "numpy", "cuda", "auto", "tpu", "", 3]),
        "seed": st.one_of(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(-2, 2**64 + 1), VALUES),
        "checked": st.one_of(st.booleans(), st.booleans(), st.booleans(), VALUES),
        "device": st.sampled_from([None, "cpu", "cuda:x", 3.5, "gpu", 0, -1, *DEVICE_STRINGS, np.array(["cpu"])]),
    }))
    options.setdefault("backend", "numpy")
    odd_num_envs = st.sampled_from([-1, 0, 2**31, 10**12, 10**30, 2.0, "2", None])
    num_envs = draw(odd_num_envs if draw(st.integers(0, 7)) == 0 else st.integers(1, 4))
    return env, num_envs, params, options


def make_or_error(env, num_envs, params, options):
    TALLY["inputs"] += 1
    TALLY["make calls"] += 1
    try:
        with time_limit(EXAMPLE_SECONDS):
            return warpsim.make(env, num_envs, **params, **options)
    except WarpsimError as error:
        expect_clear_error(error, ["num_envs", *params, *options])
    return None


INTEGER_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
ACTION_KINDS = ["valid", "out of range", "wide", "float", "bool", "shape", "string", "object", "reversed", "list",
                "meta", "huge list", *(f"valid {np.dtype(dtype).name}" for dtype in INTEGER_DTYPES)]
MASK_KINDS = ["bool", "int", "short", "string", "none list", "reversed", "tensor", "2d",
              *(f"flags {np.dtype(dtype).name}" for dtype in INTEGER_DTYPES)]


def odd_actions(env, kind: str, rng: np.random.Generator):
    shape = tuple(env.actions.shape)
    if env.spec.continuous:  # within the bounds (float64 for the integer dtypes, converted), beyond them,
        # beyond float32, and integers where floats belong
        bounds = np.array(env.spec.action_bounds, np.float64)
        low, high = bounds[:, 0], bounds[:, 1]
        valid = rng.uniform(low, high, shape).astype(np.float32)
        if kind.startswith("valid "):
            return valid.astype(np.float64)
        own = {"out of range": valid + (high - low) * rng.integers(1, 3), "wide": valid.astype(np.float64) * 1e39,
               "float": np.round(valid).astype(np.int64)}
    else:
        levels = np.array(env.spec.action_levels)
        valid = (rng.random(shape) * levels).astype(np.int64)
        if kind.startswith("valid "):
            return valid.astype(kind.split()[1])  # every level fits in every integer dtype
        own = {"out of range": valid + levels * rng.integers(1, 3), "wide": valid + 2**32,
               "float": valid.astype(np.float32)}
    if kind in own:
        return own[kind]
    return {
        "valid": valid,
        "bool": valid > 0,
        "shape": valid[..., :0] if shape[-1] else valid[None],
        "string": np.full(shape, "1"),
        "object": valid.astype(object),
        "reversed": valid[::-1],
        "list": valid.tolist(),
        "meta": torch.zeros(shape, dtype=env.actions.dtype, device="meta"),
        "huge list": np.full(shape, 2**70, dtype=object).tolist(),
    }[kind]


def odd_mask(env, kind: str, rng: np.random.Generator):
    flags = rng.random(env.num_envs) < 0.5
    if kind.startswith("flags "):
        return flags.astype(kind.split()[1])
    return {"bool": flags, "int": flags.astype(np.int64), "short": flags[:-1], "string": "all", "none list": [None],
            "reversed": flags[::-1], "tensor": torch.from_numpy(flags), "2d": flags[None]}[kind]


@pytest.mark.slow(seconds=18)
@settings(FUZZ, max_examples=1500)
@given(call=make_calls(), actions=st.lists(st.sampled_from(ACTION_KINDS), min_size=1, max_size=3),
       masks=st.lists(st.sampled_from(MASK_KINDS), max_size=2),
       seed=st.integers(0, 2**32 - 1))
def test_make_step_and_reset_either_work_or_raise_a_clear_error(call, actions, masks, seed):
    env = make_or_error(*call)
    if env is None:
        return
    TALLY["environments made"] += 1
    rng = np.random.default_rng(seed)
    for kind in actions:
        TALLY["inputs"] += 1
        with time_limit(EXAMPLE_SECONDS):
            try:
                env.step(odd_actions(env, kind, rng))
            except WarpsimError as error:
                expect_clear_error(error, ["action"])
                assert not kind.startswith("valid"), f"valid actions ({kind}) refused: {error}"
                continue
        accepted = kind.startswith("valid") or kind in ("reversed", "list")
        assert accepted or not env.checked, f"{kind} actions accepted in checked mode"
        assert_finite(env)
    for kind in masks:
        TALLY["inputs"] += 1
        with time_limit(EXAMPLE_SECONDS):
            try:
                env.reset(odd_mask(env, kind, rng))
            except WarpsimError as error:
                expect_clear_error(error, ["reset mask"])
                continue
        assert kind in ("bool", "reversed", "tensor"), f"a {kind} reset mask was accepted"
        assert_finite(env)


USER_MODULES = {
    "fuzz_fine": "from warpsim.envs.template import Beacon\nclass Fine(Beacon):\n    pass\n",
    "fuzz_syntax": "def f(:\n",
    "fuzz_raises": "raise KeyError('at import')\n",
    "fuzz_exits": "import sys\nsys.exit('bye')\n",
    "fuzz_no_params": "from warpsim import Environment\nclass Env(Environment):\n    pass\n",
    "fuzz_plain_params": "from warpsim import Environment\nclass Env(Environment):\n    Params = dict\n",
    "fuzz_getattr": "def __getattr__(name):\n    raise RuntimeError(name)\n",
}
CLASS_IDS = ["fuzz_fine:Fine", "fuzz_fine:Fine.x", "fuzz_fine:Nope", "fuzz_syntax:Env", "fuzz_raises:Env",
             "fuzz_exits:Env", "fuzz_no_params:Env", "fuzz_plain_params:Env", "fuzz_getattr:Env",
             "..x:Y", ".x:Y", ":", "a:", ":B", "a::b", "warpsim.environment:Environment", "warpsim:make",
             "os:path", "no_such_module_here:Env", "warpsim.envs.template.env:Beacon", "warpsim.envs.template:Beacon",
             "x y:Z", "\x00:Y", "tag_continuous:X"]


@pytest.fixture(scope="module")
def user_modules(tmp_path_factory):
    """Environment modules a user might write, most of them broken, importable for this file's tests."""
    folder = tmp_path_factory.mktemp("user_modules")
    for name, source in USER_MODULES.items():
        (folder / f"{name}.py").write_text(source)
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    for name in USER_MODULES:
        sys.modules.pop(name, None)


@settings(FUZZ, max_examples=60)
@given(env_id=st.sampled_from(CLASS_IDS), num_envs=st.integers(1, 2))
def test_package_module_class_ids_either_work_or_name_the_id(user_modules, env_id, num_envs):
    TALLY["inputs"] += 1
    TALLY["class ids"] += 1
    with time_limit(EXAMPLE_SECONDS):
        try:
            env = warpsim.make(env_id, num_envs, backend="numpy")
        except WarpsimError as error:
            expect_clear_error(error, [env_id, repr(env_id)])
            return
    assert env_id in ("fuzz_fine:Fine", "warpsim.envs.template.env:Beacon", "warpsim.envs.template:Beacon")
    env.step()
    assert_finite(env)


CONFIG_VALUES = st.one_of(VALUES, st.sampled_from([
    np.array([1, 2]), np.array(3), np.array(["random", "x"]), np.array("numpy"), np.array([]), np.str_("numpy"),
    np.int64(2), np.float32(0.5), np.float64("nan"), np.bool_(True), {"runner": np.array(["random"])},
    {"runner": "random"}, {"num_taggers": np.array([1, 2])}, {1: 2}, [("a", 1)], (1,), "cuda:01", 10**30]))


@settings(FUZZ, max_examples=300)
@given(changes=st.dictionaries(st.sampled_from([f.name for f in dataclasses.fields(TrainConfig)]), CONFIG_VALUES,
                               min_size=1, max_size=2),
       layered=st.booleans())
def test_every_train_config_field_takes_its_values_or_names_itself(changes, layered):
    TALLY["inputs"] += 1
    TALLY["train configs"] += 1
    try:
        config = build_config(changes) if layered else TrainConfig(**changes)
    except WarpsimError as error:
        expect_clear_error(error, list(changes))
        return
    for name, value in changes.items():
        kept = getattr(config, name)
        assert not isinstance(kept, np.ndarray), f"{name}={value!r} kept as an array"
        assert isinstance(kept, (str, int, float, bool, dict, type(None))), f"{name}={value!r} kept as {kept!r}"


@settings(FUZZ, max_examples=len(DEVICE_STRINGS))
@given(device=st.sampled_from(DEVICE_STRINGS))
def test_policy_device_strings_are_what_torch_reads_or_refused(device):
    TALLY["inputs"] += 1
    try:
        config = TrainConfig(policy_device=device)
    except WarpsimError as error:
        expect_clear_error(error, ["policy_device"])
        return
    if config.policy_device != "auto":
        assert str(torch.device(config.policy_device)) == config.policy_device, "torch reads another device"


STATE_VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32), st.integers(-3, 12),
                         st.sampled_from([2**31 - 1, -(2**31), 1e30, -1e-30]))


@pytest.mark.slow(seconds=14)
@settings(FUZZ, max_examples=200)
@given(env_id=st.sampled_from(ENVS), backend=st.sampled_from(["numpy", "numpy", "cuda"]),
       writes=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 10**6), STATE_VALUES), min_size=1, max_size=3))
def test_state_writes_are_refused_in_checked_mode_or_give_finite_outputs(env_id, backend, writes):
    env = warpsim.make(env_id, 2, backend=backend)
    names = list(env.state)
    for which, position, value in writes:
        TALLY["inputs"] += 1
        name = names[which % len(names)]
        target = getattr(env.state, name)
        index = position % target.numel()
        if not target.is_floating_point():
            if isinstance(value, float) and not np.isfinite(value):
                continue  # NaN has no integer form: nothing to write
            value = int(np.clip(value, np.iinfo(np.int32).min, np.iinfo(np.int32).max))
        target.view(-1)[index] = value
        TALLY["state writes"] += 1
    with time_limit(EXAMPLE_SECONDS):
        try:
            env.step()
        except WarpsimError as error:
            expect_clear_error(error, [f"state.{name}" for name in names])
            return
    assert_finite(env)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """A finished run, files and places for the command lines; the current directory moved to a
    temporary one, so that nothing a command line writes can land in the repository."""
    root = tmp_path_factory.mktemp("cli")
    here = os.getcwd()
    os.chdir(root)
    run = root / "run"
    assert main(["train", "--env", "tag_gridworld", "--set", "num_taggers=1", "--set", "grid_length=3", "--set",
                 "episode_length=4", "--num-envs", "2", "--rollout-steps", "4", "--iterations", "1", "--backend",
                 "numpy", "--quiet", "--run-dir", str(run)]) == 0
    (root / "afile").write_text("x")
    (root / "garbage.pt").write_bytes(b"\x00garbage")
    yield {"run": run, "file": root / "afile", "under file": root / "afile" / "x", "missing": root / "missing",
           "garbage": root / "garbage.pt", "empty": Path(""), "new": root / "new", "root": root}
    os.chdir(here)


SMALL = st.one_of(st.sampled_from(["1", "2"]),
                  st.sampled_from(["0", "-1", "abc", "", "2.5", "1e300", "nan", "inf", "True", "0.5"]))
LARGE = st.one_of(SMALL, st.just("99999999999999999999"))
SETTINGS = st.sampled_from(["num_taggers=1e300", "grid_length=-1", "episode_length=True", "bogus=1", "num_taggers",
                            "grid_length=3", "wall_hit_penalty=inf", "tag_reward_for_tagger='x'",
                            "use_full_observation=False", "grid_length=1e30"])


@st.composite
def command_lines(draw):
    command = draw(st.sampled_from(["train", "evaluate", "render", "bench", "check", "plot"]))
    place = draw(st.sampled_from(["run", "file", "under file", "missing", "garbage", "empty", "new"]))

    def options(choices: dict) -> list:
        chosen = draw(st.lists(st.sampled_from(sorted(choices)), unique=True, max_size=3))
        return [part for name in chosen for part in (name, draw(choices[name]))]

    sets = [part for setting in draw(st.lists(SETTINGS, max_size=2)) for part in ("--set", setting)]
    if command == "train":
        argv = ["--env", "tag_gridworld", "--num-envs", "2", "--rollout-steps", "4", "--iterations", "1",
                "--quiet", "--backend", "numpy", *sets, *options({
                    "--num-envs": LARGE, "--rollout-steps": LARGE, "--iterations": SMALL, "--hidden-size": LARGE,
                    "--learning-rate": SMALL, "--gamma": SMALL, "--minibatches": LARGE, "--seed": LARGE})]
        resume = draw(st.booleans())
        argv = ["--resume", "--iterations", draw(SMALL)] if resume else argv
        return ["train", *argv, "--run-dir", place]
    if command == "evaluate":
        return ["evaluate", place, "--backend", "numpy", "--episodes", "2", "--num-envs", "2", *sets,
                *options({"--episodes": SMALL, "--num-envs": LARGE, "--seed": LARGE,
                          "--random": st.sampled_from(["tagger", "nobody", ""])})]
    if command == "render":
        out = draw(st.sampled_from(["new/a.gif", "file", "under file/a.gif", "new/a.png", "run"]))
        return ["render", place, "--backend", "numpy", "--out", out, "--max-steps", "3",
                *options({"--fps": SMALL, "--max-steps": SMALL, "--seed": LARGE})]
    if command == "check":
        env = draw(st.sampled_from(["tag_gridworld", "beacon", *CLASS_IDS]))
        grid_sets = sets if env == "tag_gridworld" else []
        return ["check", env, "--num-envs", "1", "--steps", "2", *grid_sets,
                *options({"--num-envs": SMALL, "--steps": SMALL, "--seed": LARGE})]
    if command == "plot":
        out = draw(st.sampled_from(["new/a.png", "new/a.gif", "file", "under file/a.png", "run"]))
        return ["plot", place, "--baseline-episodes", "0", "--out", out,
                *options({"--baseline-episodes": LARGE, "--metric": st.sampled_from(["episode_length", "nope", ""])})]
    return ["bench", "--backend", "numpy", "--env", "tag_gridworld", "--num-envs", "2", "--steps", "2", "--repeats",
            "1", "--warmup", "1", "--results-dir", place, *sets,
            *options({"--num-envs": LARGE, "--steps": SMALL, "--repeats": SMALL, "--warmup": SMALL,
                      "--max-seconds": SMALL, "--tier": st.sampled_from(["sim", "train", "bogus"])})]


def resolve(argv: list, paths: dict) -> list:
    """Puts the fixture's paths where the command line names them."""
    resolved = []
    for part in argv:
        head, _, tail = part.partition("/")
        if head in paths:
            place = paths[head] if head != "new" else paths["root"] / f"new{TALLY['inputs']}"
            part = str(place / tail) if tail else str(place)
            if head == "empty":
                part = ""
        resolved.append(part)
    return resolved


@pytest.mark.slow(seconds=16)
@settings(FUZZ, max_examples=200)
@given(argv=command_lines())
def test_command_lines_end_in_success_or_one_line_and_exit_2(paths, user_modules, capsys, argv):
    argv = resolve(argv, paths)
    TALLY["inputs"] += 1
    TALLY["command lines"] += 1
    with time_limit(EXAMPLE_SECONDS):
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse: a usage error
            assert stop.code == 2, f"{argv}: exit {stop.code}"
            code = 2
            TALLY["clear errors"] += 1
            TALLY["usage errors"] += 1
            capsys.readouterr()
            return
    err = capsys.readouterr().err
    assert "Traceback" not in err, f"{argv}: {err}"
    TALLY[f"exit {code}"] += 1
    if code == 0:
        return
    assert code == 2, f"{argv}: exit {code}"
    lines = [line for line in err.splitlines() if ": error: " in line]  # bench also prints progress lines
    assert len(lines) == 1 and lines[0].startswith(f"warpsim {argv[0]}: error: "), err
    assert err.rstrip().endswith(lines[0]), f"the error is not one line: {err!r}"
    tokens = [part.lstrip("-").replace("-", "_") for part in argv] + [part for part in argv if part]
    expect_clear_error(WarpsimError(lines[0]), [token for token in tokens if len(token) > 1] + ["empty path"])


# ----- authoring a custom environment: run()'s kernel and mask, constants, describe() ----------------
@cuda.jit
def scaled_walk(mask, scale, pos_x):
    """mask bool[E]; scale float32[5]; pos_x float32[E, N]."""
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e < num_envs and mask[e]:
        pos_x[e, i] = pos_x[e, i] * scale[0]


def plain_walk(mask, scale, pos_x):
    """mask bool[E]; scale float32[5]; pos_x float32[E, N]."""


KERNELS = {"the kernel": scaled_walk, "a string": "scaled_walk", "None": None, "a plain function": plain_walk,
           "an int": 3, "a list": [scaled_walk], "a class": Beacon}
CONSTANTS = {
    "float32[5]": np.full(5, 0.5, np.float32), "float32[1, 5]": np.full((1, 5), 0.5, np.float32),
    "float32[5, 1]": np.full((5, 1), 0.5, np.float32), "float32[4]": np.full(4, 0.5, np.float32),
    "float64[5]": np.full(5, 0.5), "float32 scalar": np.float32(0.5), "python float": 0.5, "None": None,
    "object[5]": np.full(5, 0.5, object), "str[5]": np.full(5, "a"), "datetime64[5]": np.zeros(5, "datetime64[D]"),
    "an object": object(), "a str": "0.5", "a list": [0.5] * 5}
RUN_MASKS = ["none", "bool[E]", "bool[E] flags", "short", "long", "list", "all", "bool[E, 1]", "int32[E]",
             "tensor", "float32[E]"]


def run_mask(env, kind: str, rng: np.random.Generator):
    flags = rng.random(env.num_envs) < 0.5
    return {"none": None, "bool[E]": env.every_env, "bool[E] flags": flags, "short": flags[:-1],
            "long": np.append(flags, True), "list": flags.tolist(), "all": "all", "bool[E, 1]": flags[:, None],
            "int32[E]": flags.astype(np.int32), "tensor": torch.from_numpy(flags),
            "float32[E]": flags.astype(np.float32)}[kind]


@settings(FUZZ, max_examples=120)
@given(kernel=st.sampled_from(["the kernel"] * 6 + sorted(KERNELS)),
       constant=st.sampled_from(["float32[5]"] * 8 + sorted(CONSTANTS)),
       mask=st.sampled_from(RUN_MASKS[:3] * 2 + RUN_MASKS), per=st.sampled_from(["agent"] * 4 + ["thread", None, "all", 3]),
       seed=st.integers(0, 2**16))
def test_authoring_calls_either_run_as_the_reference_would_or_name_the_mistake(kernel, constant, mask, per, seed):
    """Whatever reaches add_constants and run(), the kernel either runs with exactly what was meant (the
    walk scales pos_x where the mask is set) or a one-line error names the call; never a raw exception."""
    TALLY["inputs"] += 1
    TALLY["authoring calls"] += 1
    env = warpsim.make(Beacon, 2, backend="cuda", num_agents=3, seed=seed)
    before = env.state.pos_x.clone()
    try:
        env.add_constants(scale=CONSTANTS[constant])
        given = run_mask(env, mask, np.random.default_rng(seed))
        with time_limit(EXAMPLE_SECONDS):
            env.run(KERNELS[kernel], per=per, mask=given)
    except WarpsimError as error:
        expect_clear_error(error, ["add_constants", "run(", "per=", "kernel scaled_walk"])
        assert torch.equal(env.state.pos_x, before), "a refused call changed the state"
        return
    assert (kernel, constant, per) == ("the kernel", "float32[5]", "agent"), "a mistake was accepted"
    assert mask in ("none", "bool[E]", "bool[E] flags"), f"a {mask} mask was accepted"
    TALLY["authoring calls run"] += 1
    where = np.ones(2, bool) if not isinstance(given, np.ndarray) else given
    expected = np.where(where[:, None], before.numpy() * np.float32(0.5), before.numpy())
    assert np.array_equal(env.state.pos_x.numpy(), expected), "the kernel ran with something else than given"


DESCRIBED = st.sampled_from([None, {}, {"num_agents": 3}, "spec", 3, [1], (1,), object(), np.zeros(2), Beacon])


@settings(FUZZ, max_examples=12)
@given(returned=DESCRIBED)
def test_a_describe_that_returns_no_spec_names_the_environment(returned):
    TALLY["inputs"] += 1
    broken = type("Broken", (Beacon,), {"describe": lambda self: returned})
    with pytest.raises(WarpsimError) as raised:
        broken(1, backend="numpy")
    expect_clear_error(raised.value, ["Broken.describe() returned"])


METRIC_LINES = st.one_of(
    st.builds(lambda steps, length: json.dumps({"iteration": 1, "env_steps": steps, "episode_length": length}),
              st.integers(0, 10**6), st.floats(0, 100)),
    st.sampled_from(['[1, 2]', '"text"', '3', 'null', '{"episode_length": 3}', '{"env_steps": "ten"}',
                     '{"env_steps": true}', '{"env_steps": -1}', '{"env_steps": 8, "episode_length": 1e308}',
                     '{"env_steps": 8, "episode_length": -1e301}', '{"env_steps": 8, "elapsed_seconds": "x"}',
                     '{"env_steps": Infinity}', '{"env_steps": 8, "episode_length": NaN}', '{"env_steps": 8',
                     '', '{"env_steps": 8, "episode_length": null}']),
    st.binary(min_size=1, max_size=12).map(lambda raw: raw.decode("latin-1")))


def plottable(line: str) -> bool:
    """What a metrics line must be for plot to draw it, said independently of warpsim's reader."""
    if not line.strip():
        return True
    try:
        record = json.loads(line.encode("latin-1").decode("utf-8"))
    except (UnicodeError, ValueError):
        return False
    if not isinstance(record, dict):
        return False
    number = lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)  # noqa: E731
    steps, elapsed = record.get("env_steps"), record.get("elapsed_seconds")
    if not number(steps) or not (elapsed is None or number(elapsed)):
        return False
    assert steps is not None
    return (0 <= steps < math.inf and (elapsed is None or 0 <= elapsed < math.inf)
            and all(not number(value) or not math.isfinite(value) or abs(value) <= 1e300 for value in record.values()))


@settings(FUZZ, max_examples=60)
@given(lines=st.lists(METRIC_LINES, min_size=1, max_size=4), utf16=st.booleans())
def test_plot_draws_a_metrics_file_or_names_its_first_bad_line(paths, capsys, lines, utf16):
    TALLY["inputs"] += 1
    TALLY["metrics files"] += 1
    run = paths["root"] / f"metrics{TALLY['inputs']}"
    run.mkdir()
    (run / "config.json").write_bytes((paths["run"] / "config.json").read_bytes())
    text = "".join(line.replace("\n", " ") + "\n" for line in lines)
    (run / "metrics.jsonl").write_bytes(text.encode("utf-16") if utf16 else text.encode("latin-1"))
    with time_limit(EXAMPLE_SECONDS):
        code = main(["plot", str(run), "--metric", "episode_length", "--baseline-episodes", "0"])
    err = capsys.readouterr().err
    assert "Traceback" not in err and code in (0, 2), err
    bad = [number for number, line in enumerate(lines, 1) if utf16 or not plottable(line.replace("\n", " "))]
    if bad:
        assert code == 2 and f"metrics.jsonl line {bad[0]} " in err and len(err.strip().splitlines()) == 1, err
        TALLY["clear errors"] += 1
    elif code == 2:
        assert "has no values of 'episode_length'" in err, err
        TALLY["clear errors"] += 1
    else:
        assert (run / "episode_length.png").is_file()


def test_zz_print_the_tally():
    """Runs last in this file: the figures of the fuzz pass (shown with ``pytest -s``)."""
    print(f"\nfuzz: {TALLY['inputs']} inputs ({TALLY['command lines']} command lines, {TALLY['environments made']} "
          f"environments made), {TALLY['clear errors']} clear errors, 0 raw exceptions, 0 hangs, "
          f"0 silent failures (any of these would have failed a test above); {dict(TALLY)}")
