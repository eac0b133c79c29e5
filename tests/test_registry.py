"""register() and make() refuse what they cannot use, saying what is allowed."""

import dataclasses
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import warpsim
from warpsim import registry
from warpsim.envs.tag_continuous import TagContinuous


def test_make_accepts_a_class_without_registering():
    env = warpsim.make(TagContinuous, 2, backend="numpy", num_runners=3)
    assert env.observations.shape == (2, 4, 22)


def test_display_name_is_the_name_or_else_the_class_name_on_the_class_and_on_an_instance():
    class Unnamed(TagContinuous):
        name = ""

    for cls, expected in [(TagContinuous, "tag_continuous"), (Unnamed, "Unnamed")]:
        assert cls.display_name == warpsim.make(cls, 1, backend="numpy").display_name == expected
    with pytest.raises(TypeError, match="unknown parameter.*'speed' for Unnamed;"):
        warpsim.make(Unnamed, 1, speed=2)


def test_duplicate_id_is_refused():
    with pytest.raises(ValueError, match="'tag_continuous' is already registered"):
        warpsim.register("tag_continuous", TagContinuous)


def test_a_non_environment_is_refused():
    with pytest.raises(TypeError, match="not a subclass of warpsim.Environment"):
        warpsim.register("not_an_env", dict)  # type: ignore[arg-type]  # the wrong class under test
    assert "not_an_env" not in warpsim.registered()


@pytest.mark.parametrize("declaration, match", [
    (warpsim.StateArray("rewards", np.float32, ("E",)), r"'rewards', a name already in use"),
    (warpsim.StateArray("loc_x", np.float32, ("E",)), r"'loc_x', a name already in use"),
    (warpsim.StateArray("energy", np.complex64, ("E",)), r"dtype complex64; allowed: bool, .*float32"),
    (warpsim.StateArray("energy", object, ("E",)), r"dtype object; allowed"),
    (warpsim.StateArray("energy", np.float32, ("E", "M")), r"dims \('E', 'M'\); give a tuple of 'E'"),
    (warpsim.StateArray("energy", np.float32, ("E", 0)), r"dims \('E', 0\)"),
    (warpsim.StateArray("my energy", np.float32, ("E",)), r"name must be a Python identifier"),
])
def test_bad_state_declarations_are_refused(declaration, match):
    class Declaring(TagContinuous):
        def describe(self):
            spec = super().describe()
            return dataclasses.replace(spec, state=spec.state + (declaration,))

    with pytest.raises(ValueError, match=match):
        warpsim.make(Declaring, 1, backend="numpy")


ENVS = Path(__file__).resolve().parents[1] / "envs"


def test_the_built_in_ids_are_the_folders_of_envs():
    # One id per folder, named by the folder's class; the template folder registers its class's name,
    # 'beacon'. A fresh process: ids other tests register in this one do not count.
    code = ("import warpsim\nfor env_id in warpsim.registered():\n"
            "    print(env_id, warpsim.registry.env_class(env_id).__module__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    modules = dict(line.split() for line in done.stdout.splitlines())
    folders = sorted(path.parent.name for path in ENVS.glob("*/__init__.py"))
    assert sorted(module.split(".")[2] for module in modules.values()) == folders
    assert all(module.startswith("warpsim.envs.") for module in modules.values())
    assert {env_id: module.split(".")[2] for env_id, module in modules.items()}["beacon"] == "template"


def envs_beside(tmp_path: Path, declare: str = "ENVIRONMENT = Beacon") -> str:
    """A copy of envs/__init__.py with one folder beside it, 'walkers': a copy of the template whose
    __init__.py names its class with ``declare``. Returns the package's name."""
    package = tmp_path / "more_envs"
    (package / "walkers").mkdir(parents=True)
    shutil.copy(ENVS / "__init__.py", package / "__init__.py")
    for module in ("__init__", "params", "reference", "kernels", "env"):
        text = (ENVS / "template" / f"{module}.py").read_text().replace("warpsim.envs.template", "more_envs.walkers")
        text = text.replace('name = "beacon"', 'name = "walkers"').replace("ENVIRONMENT = Beacon", declare)
        (package / "walkers" / f"{module}.py").write_text(text)
    return package.name


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """Leaves the registry, sys.path and sys.modules as they were."""
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in [name for name in sys.modules if name.startswith("more_envs")]:
        del sys.modules[name]


def test_a_new_folder_next_to_the_built_ins_registers_itself(tmp_path, isolated):
    # Importing the package registers the new folder, with nothing written anywhere else.
    package = envs_beside(tmp_path)
    assert "walkers" not in warpsim.registered()
    importlib.import_module(package)
    assert "walkers" in warpsim.registered()
    env = warpsim.make("walkers", 2, backend="numpy", num_agents=3)
    assert type(env).__module__ == "more_envs.walkers.env" and env.observations.shape == (2, 3, 3)


def test_a_folder_that_names_no_environment_is_refused_by_name(tmp_path, isolated):
    package = envs_beside(tmp_path, declare="")
    with pytest.raises(TypeError, match=r"envs/walkers/__init__.py does not name its environment class; "
                                        r"add ENVIRONMENT = "):
        importlib.import_module(package)


@pytest.mark.parametrize("env_id, params", [("tag_continuous", dict(num_runners=5, num_taggers=2)),
                                             ("tag_gridworld", dict(num_taggers=3)), ("beacon", {})])
def test_layout_is_what_make_allocates_without_allocating(env_id, params):
    planned = registry.layout(env_id, 3, **params)
    env = warpsim.make(env_id, 3, backend="numpy", **params)
    assert planned.spec == env.spec and planned.array_bytes == env.array_bytes()
    assert registry.layout(env_id, 6, **params).array_bytes > planned.array_bytes


def test_layout_refuses_what_make_refuses():
    with pytest.raises(warpsim.errors.InvalidTypeError, match="unknown parameter"):
        registry.layout("tag_gridworld", 2, no_such_field=1)
    with pytest.raises(warpsim.errors.InvalidValueError, match="num_envs=0 is not allowed"):
        registry.layout("tag_gridworld", 0)
