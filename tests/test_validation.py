"""One way to check a parameter: warpsim.validation, used by every Params and by TrainConfig."""

import dataclasses
import math
import re
import typing

import numpy as np
import pytest

from warpsim.envs.tag_continuous.params import TagContinuousParams
from warpsim.envs.tag_gridworld.params import TagGridworldParams
from warpsim.envs.template.params import BeaconParams
from warpsim.errors import InvalidTypeError, InvalidValueError, WarpsimError
from warpsim.train.config import TrainConfig
from warpsim.validation import check_fields, not_allowed, require_bool, require_int, require_real, shown

WRONG_TYPES = ["3", "", None, [1], b"x", 2 + 1j]


def exactly(message: str) -> str:
    """A pattern that matches ``message`` and nothing else."""
    return "^" + re.escape(message) + "$"


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), np.uint8(3), np.int8(3)])
def test_require_int_takes_python_and_numpy_integers_and_returns_a_plain_int(value):
    number = require_int("n", value, 1, 5)
    assert number == 3 and type(number) is int


@pytest.mark.parametrize("value", [True, False, np.True_, 3.0, np.float32(3), *WRONG_TYPES])
def test_require_int_refuses_other_types_with_a_type_error_that_is_also_a_value_error(value):
    message = f"n={value!r} is not allowed; give an integer in [1, 5]"
    with pytest.raises(InvalidTypeError, match=exactly(message)) as error:
        require_int("n", value, 1, 5)
    assert isinstance(error.value, InvalidValueError) and isinstance(error.value, WarpsimError)


@pytest.mark.parametrize("low, high, good, bad, allowed", [
    (1, 5, [1, 5], [0, 6], r"give an integer in \[1, 5\]"),
    (0, None, [0, 2**70], [-1], r"give an integer >= 0"),
    (None, 5, [-2**70, 5], [6], r"give an integer <= 5"),
    (None, None, [-2**70, 0, 2**70], [], r"give an integer"),
])
def test_require_int_bounds_are_inclusive(low, high, good, bad, allowed):
    for value in good:
        assert require_int("n", value, low, high) == value
    for value in bad:
        with pytest.raises(InvalidValueError, match=rf"^n={value} is not allowed; {allowed}$") as error:
            require_int("n", value, low, high)
        assert not isinstance(error.value, TypeError)


@pytest.mark.parametrize("value", [0.5, np.float32(0.5), np.float64(0.5), np.float16(0.5)])
def test_require_real_takes_python_and_numpy_floats_and_returns_a_plain_float(value):
    number = require_real("x", value, 0, 1)
    assert number == 0.5 and type(number) is float


@pytest.mark.parametrize("value", [1, np.int64(1), np.uint8(1)])
def test_require_real_takes_integers_as_floats(value):
    number = require_real("x", value, 0, 1)
    assert number == 1.0 and type(number) is float


def test_require_real_keeps_a_float32_value_exactly():
    assert require_real("x", np.float32(0.1)) == float(np.float32(0.1)) != 0.1


@pytest.mark.parametrize("value", [True, False, np.True_, *WRONG_TYPES])
def test_require_real_refuses_other_types_with_a_type_error_that_is_also_a_value_error(value):
    message = f"x={value!r} is not allowed; give a number in [0, 1]"
    with pytest.raises(InvalidTypeError, match=exactly(message)) as error:
        require_real("x", value, 0, 1)
    assert isinstance(error.value, InvalidValueError)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float32("nan"), np.float64("inf")])
@pytest.mark.parametrize("low, high", [(None, None), (0, None), (None, 0), (-1e9, 1e9)])
def test_require_real_refuses_nan_and_inf_whatever_the_finite_bounds(value, low, high):
    with pytest.raises(InvalidValueError, match="^" + re.escape(f"x={value!r} is not allowed; give a ")):
        require_real("x", value, low, high)


def test_inf_passes_only_where_a_bound_is_inf():
    assert require_real("x", math.inf, 0, math.inf) == math.inf
    assert require_real("x", -math.inf, -math.inf, 0) == -math.inf
    with pytest.raises(InvalidValueError):
        require_real("x", -math.inf, 0, math.inf)
    with pytest.raises(InvalidValueError):
        require_real("x", math.nan, -math.inf, math.inf)


def test_an_integer_beyond_float_range_is_a_clear_value_error_not_an_overflow():
    with pytest.raises(InvalidValueError, match=r"^x=1000000000.* is not allowed; give a number in \[0, 1e\+09\]$"):
        require_real("x", 10**400, 0, 1e9)


@pytest.mark.parametrize("low, high, low_exclusive, good, bad, allowed", [
    (0, 1, False, [0, 1, 0.5], [-1e-300, 1.0000001], r"give a number in \[0, 1\]"),
    (0, 1, True, [1e-300, 1], [0, -0.0], r"give a number in \(0, 1\]"),
    (0, None, True, [1e-300, 1e300], [0], r"give a number > 0"),
    (1e-9, None, False, [1e-9], [9.99e-10], r"give a number >= 1e-09"),
    (None, 0, False, [-1e300, 0], [1e-300], r"give a number <= 0"),
    (None, None, False, [-1e300, 1e300], [], r"give a finite number"),
])
def test_require_real_bounds(low, high, low_exclusive, good, bad, allowed):
    for value in good:
        assert require_real("x", value, low, high, low_exclusive=low_exclusive) == value
    for value in bad:
        with pytest.raises(InvalidValueError, match="^" + re.escape(f"x={value!r} is not allowed; ") + allowed + "$"):
            require_real("x", value, low, high, low_exclusive=low_exclusive)


@pytest.mark.parametrize("value, expected", [(True, True), (False, False), (np.True_, True), (np.False_, False)])
def test_require_bool_takes_python_and_numpy_bools_and_returns_a_plain_bool(value, expected):
    flag = require_bool("b", value)
    assert flag is expected


@pytest.mark.parametrize("value", [0, 1, np.int64(1), 1.0, "yes", "True", None])
def test_require_bool_refuses_numbers_and_strings(value):
    with pytest.raises(InvalidTypeError, match=exactly(f"b={value!r} is not allowed; give True or False")) as error:
        require_bool("b", value)
    assert isinstance(error.value, ValueError)


def test_not_allowed_has_the_same_format():
    error = not_allowed("max_turn", -2.0, "it must be >= min_turn=0.0")
    assert isinstance(error, InvalidValueError)
    assert str(error) == "max_turn=-2.0 is not allowed; it must be >= min_turn=0.0"


def test_check_fields_stores_plain_values_in_a_frozen_dataclass_and_names_fields_with_what():
    @dataclasses.dataclass(frozen=True)
    class Settings:
        size: typing.Any = np.int64(4)
        rate: typing.Any = np.float32(0.25)

    settings = Settings()
    check_fields(settings, require_int, ("size",), 1)
    check_fields(settings, require_real, ("rate",), 0, 1, low_exclusive=True)
    assert (type(settings.size), type(settings.rate)) == (int, float) and (settings.size, settings.rate) == (4, 0.25)
    with pytest.raises(InvalidValueError, match=r"^setting size=0 is not allowed; give an integer >= 1$"):
        check_fields(Settings(size=0), require_int, ("size",), 1, what="setting {}")


# ----- every Params and TrainConfig -----------------------------------------------------

CONFIGS = [TagContinuousParams, TagGridworldParams, BeaconParams, TrainConfig]


def fields_of_type(kind: type) -> list:
    """(class, field) for every field of the classes annotated as ``kind`` (or ``kind | None``)."""
    found = []
    for cls in CONFIGS:
        hints = typing.get_type_hints(cls)
        for field in dataclasses.fields(cls):
            if hints[field.name] in (kind, kind | None):
                found.append(pytest.param(cls, field.name, id=f"{cls.__name__}.{field.name}"))
    return found


def default(cls, name):
    value = {f.name: f.default for f in dataclasses.fields(cls)}[name]
    return 0.5 if value is None else value  # TrainConfig.value_clip: None means off; 0.5 is a value


INT_FIELDS, REAL_FIELDS, BOOL_FIELDS = fields_of_type(int), fields_of_type(float), fields_of_type(bool)


def test_every_config_has_fields_of_each_kind_checked_here():
    checked = {(param.values[0], param.values[1]) for param in INT_FIELDS + REAL_FIELDS + BOOL_FIELDS}
    assert len(INT_FIELDS) >= 4 and len(REAL_FIELDS) >= 4 and len(BOOL_FIELDS) >= 4
    for cls in CONFIGS:
        assert any(owner is cls for owner, _ in checked)


@pytest.mark.parametrize("cls, name", INT_FIELDS)
def test_integer_fields_take_numpy_integers_and_store_plain_ints(cls, name):
    value = default(cls, name)
    made = cls(**{name: np.int64(value)})
    assert getattr(made, name) == value and type(getattr(made, name)) is int


@pytest.mark.parametrize("cls, name", REAL_FIELDS)
def test_real_fields_take_numpy_floats_and_store_plain_floats(cls, name):
    value = np.float32(default(cls, name))
    made = cls(**{name: value})
    assert getattr(made, name) == float(value) and type(getattr(made, name)) is float


@pytest.mark.parametrize("cls, name", BOOL_FIELDS)
def test_bool_fields_take_numpy_bools_and_store_plain_bools(cls, name):
    made = cls(**{name: np.bool_(not default(cls, name))})
    assert getattr(made, name) is (not default(cls, name))


@pytest.mark.parametrize("cls, name", INT_FIELDS)
@pytest.mark.parametrize("value", [True, np.True_, 2.0, "2"])
def test_integer_fields_refuse_bools_floats_and_strings_as_type_errors(cls, name, value):
    with pytest.raises(InvalidTypeError, match=re.escape(f"{name}={value!r} is not allowed; give an integer")):
        cls(**{name: value})


@pytest.mark.parametrize("cls, name", REAL_FIELDS)
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, np.float32("inf"), 10**400])
def test_real_fields_refuse_nan_and_inf(cls, name, value):
    with pytest.raises(InvalidValueError, match=re.escape(f"{name}={shown(value)} is not allowed; give a number")):
        cls(**{name: value})


def test_a_long_value_is_shown_cut_short_on_one_line():
    assert shown(0.5) == "0.5" and shown("x" * 58) == repr("x" * 58)
    assert shown(10**400) == "1" + "0" * 23 + "..." + "0" * 8 + " (401 characters)"


@pytest.mark.parametrize("cls, name", REAL_FIELDS)
@pytest.mark.parametrize("value", [True, "0.5", [0.5]])
def test_real_fields_refuse_bools_and_strings_as_type_errors(cls, name, value):
    with pytest.raises(InvalidTypeError, match=re.escape(f"{name}={value!r} is not allowed; give a number")):
        cls(**{name: value})


@pytest.mark.parametrize("cls, name", BOOL_FIELDS)
@pytest.mark.parametrize("value", [1, 0, "yes"])
def test_bool_fields_refuse_numbers_and_strings_as_type_errors(cls, name, value):
    with pytest.raises(InvalidTypeError, match=re.escape(f"{name}={value!r} is not allowed; give True or False") + "$"):
        cls(**{name: value})


def test_train_config_messages_name_the_config_field():
    with pytest.raises(InvalidTypeError, match=r"^config field num_envs=True is not allowed; give an integer >= 1$"):
        TrainConfig(num_envs=True)
    with pytest.raises(InvalidValueError, match=r"^config field learning_rate=0 is not allowed; give a number > 0$"):
        TrainConfig(learning_rate=0)
