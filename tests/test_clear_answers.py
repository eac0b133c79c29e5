"""Every input gets a clear answer: user faults are one-line WarpsimErrors (exit 2 on the command
line), absurd amounts of work are refused up front, and a bug in warpsim keeps its traceback."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import warpsim
from warpsim import Environment, registry
from warpsim.cli import main
from warpsim.envs.template import Beacon
from warpsim.errors import WarpsimError
from warpsim.registry import _registry, register
from warpsim.train import TrainConfig
from warpsim.train.config import build_config
from warpsim.train.loop import train

GRID_RUN = ["--env", "tag_gridworld", "--set", "num_taggers=1", "--set", "grid_length=3", "--set",
            "episode_length=4", "--num-envs", "2", "--rollout-steps", "4", "--backend", "numpy", "--quiet"]


def one_line_error(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith(f"warpsim {command}: error: "), err
    return lines[-1]


@pytest.fixture
def user_modules(tmp_path, monkeypatch):
    """A folder on sys.path holding broken environment modules; they are forgotten afterwards."""
    sources = {
        "broken_syntax": "def f(:\n",
        "raises_at_import": "raise RuntimeError('the user module failed')\n",
        "exits_at_import": "import sys\nsys.exit(3)\n",
        "no_params": "from warpsim import Environment\nclass NoParams(Environment):\n    pass\n",
        "plain_params": "from warpsim import Environment\nclass Plain(Environment):\n    Params = int\n",
    }
    for name, source in sources.items():
        (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [*sources, "divides"]:
        sys.modules.pop(name, None)


@pytest.mark.parametrize("env_id, named", [
    ("..x:Y", "absolute module name"),
    ("warpsim.environment:Environment", "Params=None"),
    ("no_params:NoParams", "Params=None"),
    ("plain_params:Plain", "Params=<class 'int'>"),
    ("broken_syntax:Env", "SyntaxError"),
    ("raises_at_import:Env", "RuntimeError: the user module failed"),
    ("exits_at_import:Env", "sys.exit(3)"),
])
def test_package_module_class_ids_give_one_line_naming_the_id_and_the_fault(user_modules, env_id, named):
    with pytest.raises(WarpsimError) as raised:
        warpsim.make(env_id, 1, backend="numpy")
    message = str(raised.value)
    assert "\n" not in message and env_id in message and named in message, message


def test_the_users_own_traceback_stays_chained(user_modules):
    with pytest.raises(WarpsimError) as raised:
        warpsim.make("raises_at_import:Env", 1)
    assert isinstance(raised.value.__cause__, RuntimeError)


def test_check_of_a_broken_id_is_one_line(capsys):
    assert main(["check", "..x:Y", "--num-envs", "1", "--steps", "2"]) == 2
    assert "'..x:Y'" in one_line_error(capsys, "check")


def test_debug_adds_the_traceback_of_the_users_code(user_modules, capsys):
    assert main(["check", "raises_at_import:Env", "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "raise RuntimeError('the user module failed')" in err
    assert err.strip().splitlines()[-1].startswith("warpsim check: error: ")


def test_a_bug_in_warpsim_keeps_its_traceback_and_asks_for_a_report(monkeypatch, capsys):
    monkeypatch.setattr("warpsim.cli.parse_env_settings", {}.__getitem__)  # a TypeError in warpsim's own call
    assert main(["check", "tag_gridworld", "--steps", "1"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "TypeError" in err
    assert err.strip().splitlines()[-1].startswith("warpsim check: internal error: this is a bug in warpsim")


def test_an_exception_in_the_users_environment_code_is_one_line_naming_where(user_modules, capsys):
    (user_modules / "divides.py").write_text(
        "from warpsim.envs.template import Beacon\n\n\nclass Divides(Beacon):\n"
        "    def step_numpy(self):\n        1 / 0\n")
    command = ["bench", "--env", "divides:Divides", "--backend", "numpy", "--num-envs", "1", "--steps", "1",
               "--repeats", "1", "--warmup", "1"]
    assert main(command) == 2
    line = one_line_error(capsys, "bench")
    assert "ZeroDivisionError: division by zero, raised by your code at " in line and "divides.py:6" in line
    assert main([*command, "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_a_config_file_with_a_list_for_env_params_is_one_line(tmp_path, capsys):
    config = tmp_path / "p.json"
    config.write_text(json.dumps({"env_params": [1, 2]}))
    assert main(["train", "--config-file", str(config), "--backend", "numpy", "--run-dir", str(tmp_path / "r")]) == 2
    assert "env_params=[1, 2]" in one_line_error(capsys, "train")


class Unframed(Beacon):
    """The template without its optional frame()."""

    frame = Environment.frame


def test_rendering_an_environment_without_frame_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    register("unframed", Unframed)
    run = tmp_path / "run"
    train(TrainConfig(env="unframed", env_params=dict(num_agents=1, episode_length=2), num_envs=1, rollout_steps=2,
                      minibatches=1, iterations=1, backend="numpy"), run, progress=None)
    assert main(["render", str(run), "--backend", "numpy", "--out", str(tmp_path / "b.gif")]) == 2
    assert "Unframed does not define frame()" in one_line_error(capsys, "render")


@pytest.mark.parametrize("dtype", [np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.uint8])
def test_unsigned_and_narrow_actions_and_masks_are_taken(dtype):
    env = warpsim.make("tag_gridworld", 2, backend="numpy")
    twin = warpsim.make("tag_gridworld", 2, backend="numpy")
    actions = np.ones(env.actions.shape, dtype)
    env.step(actions)
    twin.step(actions.astype(np.int32))
    assert torch.equal(env.observations, twin.observations)
    with pytest.raises(WarpsimError, match="reset mask"):
        env.reset(np.ones(2, dtype))  # type: ignore[arg-type]  # the wrong type under test


@pytest.mark.parametrize("device", ["cuda:01", "cuda:00", "cuda:128", "cuda:99999999999999999999", "cuda:-1",
                                    "cuda:1.0", np.str_("cuda:٣")])
def test_policy_devices_torch_cannot_read_are_refused_by_the_config(device):
    with pytest.raises(WarpsimError, match=r"policy_device=.*cuda:N \(N in \[0, 127\]"):
        TrainConfig(policy_device=device)


def test_cuda_devices_in_range_pass_the_config():
    assert TrainConfig(policy_device="cuda:127").policy_device == "cuda:127"


@pytest.mark.parametrize("settings, field", [
    (dict(opponents={"runner": np.array(["random", "x"])}), "opponent runner"),
    (dict(opponents={"runner": np.array("random")}), "opponent runner"),
    (dict(precision=np.array(["fp32", "bf16"])), "precision"),
    (dict(backend=np.array(["numpy"])), "backend"),
    (dict(env=np.array(["a", "b"])), "env"),
    (dict(policy_device=np.array(["cpu"])), "policy_device"),
    (dict(graphs=np.array(["on", "off"])), "graphs"),
    (dict(iterations=np.array([1, 2])), "iterations"),
    (dict(env_params=np.array([1, 2])), "env_params"),
    (dict(opponents=np.array([1, 2])), "opponents"),
])
def test_numpy_arrays_as_config_values_are_clear_errors(settings, field):
    for build in (lambda: TrainConfig(**settings), lambda: build_config(settings)):
        with pytest.raises(WarpsimError, match=field):
            build()


def test_absurd_amounts_of_work_are_refused_before_any(tmp_path, capsys):
    with pytest.raises(WarpsimError, match=r"iterations=999999999999 .*at most 1e\+12"):
        TrainConfig(iterations=999999999999)
    run = tmp_path / "run"
    assert main(["train", *GRID_RUN, "--iterations", "1", "--run-dir", str(run)]) == 0
    assert main(["train", "--resume", "--run-dir", str(run), "--iterations", "999999999999", "--quiet"]) == 2
    assert "iterations=999999999999" in one_line_error(capsys, "train")
    assert main(["plot", str(run), "--baseline-episodes", "999999999999", "--out", str(tmp_path / "a.png")]) == 2
    assert "baseline_episodes=999999999999" in one_line_error(capsys, "plot")
    assert not (tmp_path / "a.png").exists()


def test_plot_refuses_a_name_that_is_not_png(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", *GRID_RUN, "--iterations", "1", "--run-dir", str(run)]) == 0
    assert main(["plot", str(run), "--baseline-episodes", "0", "--out", str(tmp_path / "a.gif")]) == 2
    assert "must end in .png" in one_line_error(capsys, "plot")
    assert not (tmp_path / "a.gif").exists()


def test_an_id_registered_in_process_travels_to_the_simulator_run_as_its_class():
    from warpsim.envs.template import Beacon
    from warpsim.registry import portable_id
    register("beacon_here", Beacon)
    try:
        assert portable_id("beacon_here") == "warpsim.envs.template.env:Beacon"
        local = type("LocalBeacon", (Beacon,), {})
        register("local_beacon", local)
        with pytest.raises(WarpsimError, match=r"'local_beacon' was registered in this process.*package.module:Class"):
            portable_id("local_beacon")
    finally:
        _registry.pop("beacon_here", None)
        _registry.pop("local_beacon", None)


@pytest.mark.slow(seconds=12)
def test_check_on_a_cpu_runs_an_id_registered_in_process(tmp_path):
    """The simulator re-run is a new process: it is given the class, not the id it cannot know."""
    script = textwrap.dedent("""
        import sys
        from warpsim import register
        from warpsim.cli import main
        from warpsim.envs.template import Beacon
        register("beacon_here", Beacon)
        sys.exit(main(["check", "beacon_here", "--num-envs", "1", "--steps", "2", "--set", "num_agents=1"]))
    """)
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr


def test_a_zero_dimensional_unsigned_action_array_is_a_shape_error():
    env = warpsim.make("tag_gridworld", 2, backend="numpy", num_taggers=1)
    with pytest.raises(warpsim.WarpsimError, match=r"actions have shape \(\); expected \(2, 2, 1\)"):
        env.step(np.array(3, np.uint32))


@pytest.mark.parametrize("name", ["neighbour_search", "observation_dtype"])
@pytest.mark.parametrize("value", [np.array(["grid", "grid"]), np.array(["float32"]), ["grid"]])
def test_an_array_for_a_string_parameter_is_refused_as_a_value(name, value):
    with pytest.raises(ValueError, match=rf"^{name}=.* is not allowed; choose one of "):
        warpsim.make("tag_continuous", 1, backend="numpy", **{name: value})


@pytest.mark.parametrize("field, value, flags", [
    ("stagger_steps", 10**12, ["--stagger-steps", str(10**12)]),
    ("num_envs", 10**9, ["--num-envs", str(10**9), "--iterations", "2000"]),
    ("iterations", 10**11, ["--iterations", str(10**11)]),
])
def test_the_work_cap_counts_every_step_and_names_the_field_that_broke_it(field, value, flags, capsys):
    assert main(["train", "--config", "grid-small", "--run-dir", "never", *flags]) == 2
    line = one_line_error(capsys, "train")
    assert f"{field}={value} is not allowed; a run's (iterations x rollout_steps + stagger_steps) x num_envs " \
           f"environment steps must be at most 1e+12" in line
    assert not os.path.exists("never")


def test_a_string_parameter_takes_a_bare_word_on_the_command_line(tmp_path):
    run = tmp_path / "run"
    assert main(["train", "--env", "tag_continuous", "--set", "num_taggers=1", "--set", "num_runners=2", "--set",
                 "observation_dtype=bfloat16", "--set", "neighbour_search=brute_force", "--set",
                 "use_full_observation=false", "--set", "num_other_agents_observed=1", "--set", "episode_length=4",
                 "--iterations", "1", "--num-envs", "2", "--rollout-steps", "4", "--backend", "numpy", "--quiet",
                 "--run-dir", str(run)]) == 0
    params = json.loads((run / "config.json").read_text())["env_params"]
    assert params["observation_dtype"] == "bfloat16" and params["neighbour_search"] == "brute_force"


def test_a_config_file_that_is_a_directory_is_called_one(tmp_path, capsys):
    assert main(["train", "--config-file", str(tmp_path), "--run-dir", str(tmp_path / "run")]) == 2
    assert one_line_error(capsys, "train").endswith(f"config file {tmp_path} is a directory; give a .json or "
                                                    f".toml file")
