"""register() and make() refuse what they cannot use, saying what is allowed."""

import dataclasses

import pytest

import warpsim
from warpsim.envs import TagContinuous


def test_make_accepts_a_class_without_registering():
    env = warpsim.make(TagContinuous, 2, backend="numpy", num_runners=3)
    assert env.observations.shape == (2, 4, 22)


def test_duplicate_id_is_refused():
    with pytest.raises(ValueError, match="'tag_continuous' is already registered"):
        warpsim.register("tag_continuous", TagContinuous)


def test_a_non_environment_is_refused():
    with pytest.raises(TypeError, match="not a subclass of warpsim.Environment"):
        warpsim.register("not_an_env", dict)
    assert "not_an_env" not in warpsim.registered()


def test_reserved_state_names_are_refused():
    class Clashing(TagContinuous):
        def describe(self):
            spec = super().describe()
            clash = warpsim.StateArray("rewards", "float32", ("E",))
            return dataclasses.replace(spec, state=spec.state + (clash,))

    with pytest.raises(ValueError, match="named 'rewards', which warpsim already uses"):
        warpsim.make(Clashing, 1, backend="numpy")
