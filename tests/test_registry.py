"""register() and make() refuse what they cannot use, saying what is allowed."""

import dataclasses

import pytest

import warpsim
from warpsim.envs import TagContinuous


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
        warpsim.register("not_an_env", dict)
    assert "not_an_env" not in warpsim.registered()


@pytest.mark.parametrize("declaration, match", [
    (warpsim.StateArray("rewards", "float32", ("E",)), r"'rewards', a name already in use"),
    (warpsim.StateArray("loc_x", "float32", ("E",)), r"'loc_x', a name already in use"),
    (warpsim.StateArray("energy", "complex64", ("E",)), r"dtype complex64; allowed: bool, .*float32"),
    (warpsim.StateArray("energy", object, ("E",)), r"dtype object; allowed"),
    (warpsim.StateArray("energy", "float32", ("E", "M")), r"dims \('E', 'M'\); give a tuple of 'E'"),
    (warpsim.StateArray("energy", "float32", ("E", 0)), r"dims \('E', 0\)"),
    (warpsim.StateArray("my energy", "float32", ("E",)), r"name must be a Python identifier"),
])
def test_bad_state_declarations_are_refused(declaration, match):
    class Declaring(TagContinuous):
        def describe(self):
            spec = super().describe()
            return dataclasses.replace(spec, state=spec.state + (declaration,))

    with pytest.raises(ValueError, match=match):
        warpsim.make(Declaring, 1, backend="numpy")
