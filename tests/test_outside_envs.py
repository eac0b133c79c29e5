"""Environments that live outside warpsim: ``package.module:Class`` wherever an id is taken, and ids
that installed packages declare in the ``warpsim.envs`` entry-point group."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import warpsim
from warpsim import registry
from warpsim.cli import main
from warpsim.errors import InvalidTypeError, InvalidValueError

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = REPO / "envs" / "template"
ENTRY_POINTS = "[warpsim.envs]\n{env_id} = {module}:Beacon\n"


def copy_template(target: Path, module: str) -> Path:
    """The template copied as docs/custom_envs.md says: its absolute imports name the new package."""
    package = target / module
    package.mkdir(parents=True)
    for name in ("__init__", "params", "reference", "kernels", "env"):
        text = (TEMPLATE / f"{name}.py").read_text().replace("warpsim.envs.template", module)
        (package / f"{name}.py").write_text(text)
    return target


def add_distribution(site: Path, module: str, env_id: str) -> None:
    """A fake installed distribution whose entry point declares ``env_id``."""
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS.format(env_id=env_id, module=module))


@pytest.fixture
def isolated(monkeypatch):
    """Leaves the registry and sys.modules as they were."""
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    before = set(sys.modules)
    yield monkeypatch
    for name in set(sys.modules) - before:
        if name.startswith("walkers"):
            del sys.modules[name]


def command_line_env(**extra) -> dict:
    """The environment of a warpsim subprocess: no simulator preset, so check re-runs itself."""
    env = {key: value for key, value in os.environ.items() if key not in ("NUMBA_ENABLE_CUDASIM", "PYTHONPATH")}
    return {**env, **extra}


def test_make_takes_module_colon_class(tmp_path, isolated):
    isolated.syspath_prepend(str(copy_template(tmp_path, "walkers_a")))
    env = warpsim.make("walkers_a:Beacon", 2, backend="numpy", num_agents=3)
    assert type(env).__module__ == "walkers_a.env" and env.observations.shape == (2, 3, 3)
    assert registry.parse_env_settings("walkers_a.env:Beacon", ["num_agents=5"]) == {"num_agents": 5}


@pytest.mark.parametrize("spec, error, match", [
    ("no_such_module_here:Beacon", InvalidValueError, r"cannot import no_such_module_here"),
    ("warpsim.envs.template:Nothing", InvalidValueError, r"warpsim.envs.template has no attribute 'Nothing'"),
    ("warpsim.registry:make", InvalidTypeError, r"not a subclass of warpsim.Environment"),
    (":Beacon", InvalidValueError, r"give package.module:Class"),
])
def test_a_bad_module_colon_class_is_a_clear_error(spec, error, match):
    with pytest.raises(error, match=match):
        warpsim.make(spec, 1, backend="numpy")


def test_an_installed_package_declares_ids_through_entry_points(tmp_path, isolated):
    site = copy_template(tmp_path, "walkers_b")
    add_distribution(site, "walkers_b", "walkers")
    isolated.syspath_prepend(str(site))
    assert "walkers" in warpsim.registered()
    assert "walkers_b" not in sys.modules, "listing the ids imports nothing"
    env = warpsim.make("walkers", 1, backend="numpy", num_agents=2)
    assert type(env).__module__ == "walkers_b.env"
    assert registry.env_class("walkers") is type(env)


def test_the_command_line_trains_benches_and_evaluates_a_module_colon_class(tmp_path, isolated, capsys):
    isolated.syspath_prepend(str(copy_template(tmp_path / "code", "walkers_c")))
    run = tmp_path / "run"
    assert main(["train", "--env", "walkers_c:Beacon", "--set", "num_agents=2", "--iterations", "1",
                 "--num-envs", "2", "--rollout-steps", "4", "--minibatches", "1", "--backend", "numpy",
                 "--run-dir", str(run), "--quiet"]) == 0
    assert main(["evaluate", str(run), "--episodes", "2", "--num-envs", "2", "--backend", "numpy"]) == 0
    assert main(["bench", "--env", "walkers_c:Beacon", "--num-envs", "2", "--backend", "numpy", "--steps", "2",
                 "--repeats", "1", "--warmup", "1"]) == 0
    assert "beacon E=2 N=4" in capsys.readouterr().out


@pytest.mark.slow(seconds=11)
def test_check_reruns_on_the_simulator_with_a_module_in_the_current_directory(tmp_path):
    copy_template(tmp_path, "walkers_d")
    done = subprocess.run([str(Path(sys.executable).with_name("warpsim")), "check", "walkers_d:Beacon",
                           "--steps", "3", "--set", "num_agents=2"], cwd=tmp_path, env=command_line_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("consistent: beacon E=2 N=2")


def test_check_reruns_on_the_simulator_with_an_entry_point_id(tmp_path):
    site = copy_template(tmp_path / "site", "walkers_e")
    add_distribution(site, "walkers_e", "walkers")
    done = subprocess.run([str(Path(sys.executable).with_name("warpsim")), "check", "walkers", "--steps", "3",
                           "--set", "num_agents=2"], cwd=tmp_path, env=command_line_env(PYTHONPATH=str(site)),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("consistent: beacon E=2 N=2")
