"""Kernels launched by their parameter names (``Environment.run``, ``warpsim.binding``): every kernel
of every registered environment binds, and a kernel asking for what the environment does not hold
(or holds with another dtype or dims) is refused at its first launch, before anything runs."""

import dataclasses
import importlib
import pkgutil
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from numba import cuda

import warpsim
from warpsim.binding import declarations, python_function
from warpsim.envs.template import Beacon
from warpsim.errors import InvalidTypeError, InvalidValueError
from warpsim.kernels.indexing import agent_of_thread
from warpsim.registry import env_class
from warpsim.removed import RemovedError

CONFIGURATIONS: dict[str, list[dict[str, Any]]] = {
    "beacon": [dict(num_agents=3, episode_length=2), dict(num_agents=3, episode_length=2, continuous_actions=True)],
    "tag_continuous": [
        dict(num_taggers=2, num_runners=3, episode_length=2, observe_own_state=True),
        dict(num_taggers=2, num_runners=3, episode_length=2, use_full_observation=False,
             neighbour_search="brute_force"),
        dict(num_taggers=2, num_runners=3, episode_length=2, use_full_observation=False, neighbour_search="grid"),
        dict(num_taggers=2, num_runners=3, episode_length=2, continuous_actions=True),
    ],
    "simple_spread": [dict(N=3, max_cycles=2, num_agent_neighbors=1, num_landmark_neighbors=4),
                      dict(N=3, max_cycles=2, continuous_actions=True)],
    "simple_adversary": [dict(N=2, max_cycles=2, num_agent_neighbors=1, num_landmark_neighbors=1),
                         dict(N=2, max_cycles=2, continuous_actions=True)],
    "simple_tag": [dict(num_obstacles=1, max_cycles=2, num_agent_neighbors=2, num_landmark_neighbors=2),
                   dict(max_cycles=2, continuous_actions=True)],
    "simple_speaker_listener": [dict(max_cycles=2), dict(max_cycles=2, continuous_actions=True)],
    "tag_gridworld": [
        dict(num_taggers=2, episode_length=2),
        dict(num_taggers=2, episode_length=2, use_full_observation=False, closing_reward_for_tagger=0.5),
    ],
}
"""Parameters that together reach every kernel of each shipped environment."""


def factory_kernels(env_id: str) -> set:
    """The kernels the configurations above compile through a factory (not defined at module level)."""
    if env_id != "tag_continuous":
        return set()
    from warpsim.envs.tag_continuous.step_kernels import step_kernels

    return {*step_kernels(0, True, True, False, False, False), *step_kernels(2, True, True, False, True, False),
            *step_kernels(0, True, True, False, False, True)}


def is_kernel(value) -> bool:
    """A ``cuda.jit`` kernel (not a device function), on a GPU or under the simulator."""
    if hasattr(value, "_device"):  # the simulator's stand-in
        return not value._device
    options = getattr(value, "targetoptions", None)
    return isinstance(options, dict) and not options.get("device", False)


def kernels_of(package: str) -> set:
    """The kernels defined in the modules of ``package``."""
    found = set()
    for module_info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        module = importlib.import_module(f"{package}.{module_info.name}")
        found |= {value for value in vars(module).values()
                  if is_kernel(value) and python_function(value).__module__ == module.__name__}
    return found


@pytest.mark.parametrize("env_id", warpsim.registered())
def test_every_kernel_of_every_registered_environment_binds(env_id):
    assert env_id in CONFIGURATIONS, f"add parameters reaching every kernel of {env_id} to CONFIGURATIONS"
    bound = set()
    for params in CONFIGURATIONS[env_id]:
        env = warpsim.make(env_id, 2, backend="cuda", **params)
        for _ in range(3):  # episodes of 2 steps: the auto-reset runs too
            env.step()
        bound |= set(env._bindings)
    package = env_class(env_id).__module__.rsplit(".", 1)[0]
    expected = kernels_of(package) | factory_kernels(env_id)
    assert expected and expected <= bound, sorted(python_function(k).__name__ for k in expected - bound)


@cuda.jit
def misnamed(mask, pos_z):
    """mask bool[E]; pos_z float32[E, N]."""


@cuda.jit
def clock_as_float(t):
    """t float32[E]."""


@cuda.jit
def positions_per_environment(pos_x):
    """pos_x float32[E]."""


@cuda.jit
def undeclared(pos_x):
    """Moves nothing."""


@cuda.jit
def step_size_as_int(step_size, pos_x):
    """step_size int32; pos_x float32[E, N]."""


@cuda.jit
def shift(step_size, grid_length, pos_x):
    """pos_x += step_size, clipped at L. step_size, grid_length float32; pos_x float32[E, N]."""
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e < num_envs:
        pos_x[e, i] = min(pos_x[e, i] + step_size, grid_length)


def beacon():
    return warpsim.make("beacon", 2, backend="cuda", num_agents=3)


@pytest.mark.parametrize("kernel, error, message", [
    (misnamed, InvalidValueError,
     r"kernel misnamed: parameter 'pos_z' names nothing the environment offers; available: .*\bpos_x, pos_y\b"),
    (clock_as_float, InvalidTypeError,
     r"kernel clock_as_float: parameter 't' is declared float32\[E\] in its docstring, but the environment's t "
     r"is int32\[E\]"),
    (positions_per_environment, InvalidValueError,
     r"kernel positions_per_environment: parameter 'pos_x' is declared float32\[E\] in its docstring, but the "
     r"environment's pos_x is float32\[E, N\]"),
    (undeclared, InvalidValueError, r"kernel undeclared: parameter 'pos_x' is not declared in its docstring"),
    (step_size_as_int, InvalidTypeError,
     r"kernel step_size_as_int: parameter 'step_size' is declared int32 in its docstring, but the "
     r"environment's step_size is float32"),
])
def test_a_kernel_the_environment_cannot_feed_is_refused_before_it_runs(kernel, error, message):
    env = beacon()
    before = {name: array.clone() for name, array in env.state.items()}
    with pytest.raises(error, match=message):
        env.run(kernel, per="agent")
    assert all(np.array_equal(before[name], array) for name, array in env.state.items())
    assert kernel not in env._bindings


def test_params_reach_kernels_cast_once_by_their_declared_type():
    env = beacon()
    start = env.state.pos_x.clone()
    env.run(shift, per="agent")
    env.params = dataclasses.replace(env.params, step_size=0.25)
    env.run(shift, per="agent")  # new params: bound anew
    length = np.float32(env.params.grid_length)
    once = np.minimum(start.numpy() + np.float32(0.5), length)
    assert np.array_equal(env.state.pos_x.numpy(), np.minimum(once + np.float32(0.25), length))


def test_each_launch_hands_the_launcher_the_same_bound_arguments():
    """The prepared-launch cache keys arrays by identity: a binding made once keeps them."""
    env = beacon()
    launched = []
    object.__setattr__(env, "_launch", lambda kernel, items, *arguments: launched.append((items, arguments)))
    for _ in range(2):
        env.run(shift, per="agent")
    (items, first), (_, second) = launched
    assert items == 2 * 3 and all(a is b for a, b in zip(first, second))
    assert (type(first[0]), type(first[1])) == (np.float32, np.float32) and first[2] is env.views.pos_x


def test_a_mask_for_a_kernel_without_one_and_an_unknown_launch_shape_are_refused():
    env = beacon()
    with pytest.raises(InvalidValueError, match="a mask was given to run.. for kernel shift, which has no "
                                                "parameter 'mask'"):
        env.run(shift, per="agent", mask=env.every_env)
    with pytest.raises(InvalidValueError, match=r"per='thread' is not allowed; allowed: 'agent', 'env', 'block'"):
        env.run(shift, per="thread")


@pytest.mark.parametrize("constants, error, message", [
    (dict(pos_x=np.zeros(3, np.float32)), InvalidValueError, "adds the constant 'pos_x', the name of one of its"),
    (dict(seed=np.uint64(1)), InvalidValueError, "adds the constant 'seed'"),
    (dict(scale=0.5), InvalidTypeError, r"Beacon.add_constants\(scale=...\) got float 0.5; give a NumPy array or "
                                        r"scalar of a kernel dtype \(bool, .*float64\), e.g. np.float32\(0.5\)$"),
    (dict(scale=None), InvalidTypeError, r"add_constants\(scale=...\) got NoneType None; give a NumPy array or "
                                         r"scalar of a kernel dtype \([^)]*\)$"),
    (dict(scale=object()), InvalidTypeError, r"add_constants\(scale=...\) got object <object object"),
    (dict(scale="fast"), InvalidTypeError, r"add_constants\(scale=...\) got str 'fast'"),
    (dict(scale=np.array(["a", "b"])), InvalidTypeError, r"add_constants\(scale=...\) got ndarray"),
    (dict(scale=np.array(["2026-01-01"], "datetime64[D]")), InvalidTypeError, r"add_constants\(scale=...\) got "),
    (dict(scale=np.array([1, None])), InvalidTypeError, r"add_constants\(scale=...\) got ndarray"),
    (dict(scale=[1.0, 2.0]), InvalidTypeError, r"e.g. np.array\(\[...\], dtype=np.float32\)$"),
])
def test_a_constant_that_would_shadow_an_array_or_is_a_python_number_is_refused(constants, error, message):
    with pytest.raises(error, match=message):
        beacon().add_constants(**constants)


def test_a_docstring_declares_lists_and_ranges_of_parameters():
    from warpsim.envs.tag_continuous.step_kernels import step_kernels

    step = step_kernels(0, True, True, False, False, False).step
    declared = {name: str(value) for name, value in declarations(step).items()}
    assert declared["mask"] == "bool[E]" and declared["observe_own_state"] == "bool"
    assert [declared[name] for name in ("loc_x", "loc_y", "speed", "direction", "acceleration")] == \
        ["float32[E, N]"] * 5
    assert declared["position_scale"] == declared["speed_scale"] == "float32"
    assert declared["observations"] == "float32 or int16[E, N, D]"


@cuda.jit
def scaled(scale, pos_x):
    """scale float32[5]; pos_x float32[E, N]."""


@cuda.jit
def scaled_column(scale, pos_x):
    """scale float32[5, 1]; pos_x float32[E, N]."""


@pytest.mark.parametrize("kernel, shape, message", [
    (scaled, (1, 5), r"kernel scaled: parameter 'scale' is declared float32\[5\] in its docstring, but the "
                     r"constant scale has shape \[1, 5\]; give it 1 dimension\(s\) as declared, or declare it "
                     r"float32\[1, 5\]"),
    (scaled_column, (5,), r"declared float32\[5, 1\] in its docstring, but the constant scale has shape \[5\]"),
    (scaled, (4,), r"declared float32\[5\] in its docstring, but the constant scale has shape \[4\]"),
])
def test_a_constant_of_other_dims_than_declared_is_refused_at_the_first_launch(kernel, shape, message):
    env = beacon()
    env.add_constants(scale=np.ones(shape, np.float32))
    with pytest.raises(InvalidValueError, match=message):
        env.run(kernel, per="agent")
    assert kernel not in env._bindings


def test_a_constant_of_the_declared_dims_binds():
    env = beacon()
    env.add_constants(scale=np.ones(5, np.float32))
    env.run(scaled, per="agent")
    assert scaled in env._bindings


@cuda.jit
def uses_an_undeclared_scalar(step_size, pos_x):
    """pos_x float32[E, N]."""


@cuda.jit
def uses_an_undeclared_constant(moves_x, pos_x):
    """pos_x float32[E, N]."""


@pytest.mark.parametrize("kernel, hint", [
    (uses_an_undeclared_scalar, "write 'step_size float32' there"),
    (uses_an_undeclared_constant, "write 'moves_x float32[5]' there"),
    (undeclared, "write 'pos_x float32[E, N]' there"),
])
def test_the_hint_for_an_undeclared_parameter_is_what_it_would_bind(kernel, hint):
    with pytest.raises(InvalidValueError, match=re.escape(hint)):
        beacon().run(kernel, per="agent")


def plain_function(pos_x):
    """pos_x float32[E, N]."""


@pytest.mark.parametrize("kernel, given", [
    ("reset_agents", "str 'reset_agents'"), (None, "NoneType None"), (plain_function, "function <function"),
])
def test_run_refuses_what_is_not_a_kernel_in_one_line(kernel, given):
    with pytest.raises(InvalidTypeError, match=re.escape(f"Beacon.run() got {given}") + r".*; give a function "
                                               r"decorated with @cuda.jit \(from numba import cuda\)$"):
        beacon().run(kernel, per="agent")


@cuda.jit
def masked(mask, pos_x):
    """mask bool[E]; pos_x float32[E, N]."""


@pytest.mark.parametrize("mask, given", [
    (np.ones(1, np.bool_), "a ndarray of shape (1,) and dtype bool"),
    (np.ones(3, np.bool_), "a ndarray of shape (3,) and dtype bool"),
    (np.ones((2, 1), np.bool_), "a ndarray of shape (2, 1) and dtype bool"),
    (np.ones(2, np.int32), "a ndarray of shape (2,) and dtype int32"),
    ([True, True], "list [True, True]"),
    ("all", "str 'all'"),
    (torch.ones(2, dtype=torch.bool), "a Tensor of shape (2,) and dtype torch.bool"),
])
def test_a_mask_given_to_run_is_bool_of_e_on_the_environments_device(mask, given):
    env = beacon()
    with pytest.raises(InvalidValueError, match=re.escape(f"Beacon.run(masked, mask=...) got {given}; give bool[2] "
                                                          f"on the environment's device")):
        env.run(masked, per="agent", mask=mask)


def test_a_mask_of_the_right_form_runs():
    env = beacon()
    env.run(masked, per="agent", mask=np.array([True, False]))
    env.run(masked, per="agent", mask=env.every_env)


def test_the_removed_launch_and_constant_name_their_replacements():
    env = beacon()
    with pytest.raises(RemovedError, match=r"^Environment.launch\(kernel, num_items, \*arguments\) was removed in "
                                           r"warpsim 0.2.0: write self.run\(kernel, per="):
        env.launch(shift, 6, env.views.pos_x)
    with pytest.raises(RemovedError, match=r"^Environment.constant\(values\) was removed in warpsim 0.2.0: write "
                                           r"self.add_constants\(name=values\)"):
        env.constant(np.zeros(3, np.float32))
    assert "### Porting from `launch`" in (Path(__file__).parent.parent / "docs" / "custom_envs.md").read_text()


class NotASpec(Beacon):
    def describe(self):
        return {"num_agents": 3}


class NoResetKernel(Beacon):
    reset_cuda = None


@pytest.mark.parametrize("cls, message", [
    (NotASpec, r"NotASpec.describe\(\) returned dict \{'num_agents': 3\}; it must return an EnvSpec"),
    (NoResetKernel, r"NoResetKernel.reset_cuda is None, not a method; define it with 'def reset_cuda\(self, ...\)'"),
])
def test_hooks_that_are_not_methods_or_do_not_describe_are_one_line_errors(cls, message):
    with pytest.raises(InvalidTypeError, match=message):
        cls(2, backend="cuda")
