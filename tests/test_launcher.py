"""The launch glue: Numba's low-occupancy warning is silenced for warpsim's launches only, and
Python numbers (typed float64 / int64 on a GPU, computed otherwise by the simulator) are refused."""

import warnings

import numpy as np
import pytest
import torch
from helpers import KERNEL_TARGETS, require_target
from numba import cuda

import warpsim
from warpsim import device
from warpsim.device import Launcher, resolve_placement
from warpsim.errors import InvalidTypeError

SHIPPED = ("tag_continuous", "tag_gridworld", "beacon")
LOW_OCCUPANCY = "Grid size 1 will likely result in GPU under-utilization due to low occupancy."


class WarningOnLaunch:
    """Stands for a Numba kernel whose launch configuration warns, as numba-cuda's does on a GPU."""

    def __init__(self, category=None, message=LOW_OCCUPANCY):
        if category is None:
            from numba.cuda.core.errors import NumbaPerformanceWarning
            category = NumbaPerformanceWarning
        self.category, self.message, self.launched = category, message, []

    def __getitem__(self, configuration):
        warnings.warn(self.category(self.message), stacklevel=2)
        return lambda *args: self.launched.append(args)


def numpy_launcher() -> Launcher:
    return Launcher(resolve_placement("numpy"))


def test_the_low_occupancy_warning_is_silenced_inside_warpsim_launches():
    kernel = WarningOnLaunch()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        numpy_launcher()(kernel, 1, np.float32(1))
        numpy_launcher()(kernel, 1, np.float32(2))
    assert caught == [] and kernel.launched == [(np.float32(1),), (np.float32(2),)]


def test_the_filter_does_not_reach_beyond_the_launch():
    kernel = WarningOnLaunch()
    numpy_launcher()(kernel, 1)
    with pytest.warns(kernel.category, match="Grid size 1"):
        kernel[1, 1, 0]


def test_other_warnings_of_a_launch_still_show():
    kernel = WarningOnLaunch(UserWarning, "something else")
    with pytest.warns(UserWarning, match="something else"):
        numpy_launcher()(kernel, 1)


@pytest.mark.gpu
def test_a_one_environment_step_on_the_gpu_raises_no_warning():
    # PettingZoo's parallel_api_test turns warnings into errors; a 1-environment batch is its case.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for env_id in SHIPPED:
            env = warpsim.make(env_id, 1, backend="cuda")
            env.step()
            env.reset()
            torch.cuda.synchronize()


@cuda.jit
def scale(factor, values):
    """factor float32; values float32[K]."""
    k = cuda.grid(1)
    if k < values.shape[0]:
        values[k] = values[k] * factor


def cuda_launcher() -> Launcher:
    return Launcher(resolve_placement("cuda"))


@pytest.mark.parametrize("value, wrap", [(0.5, "np.float32"), (3, "np.int32")])
def test_a_python_number_given_to_a_kernel_is_refused(value, wrap):
    values = warpsim.make("beacon", 1, backend="cuda").views.pos_x[0]
    before = values.copy()
    with pytest.raises(InvalidTypeError, match=rf"kernel scale: argument 1 \(factor\) is the Python "
                                                rf"{type(value).__name__} {value!r}.*{wrap}\({value!r}\)"):
        cuda_launcher()(scale, values.size, value, values)
    assert np.array_equal(values, before)


def test_numpy_scalars_and_bools_are_launched():
    values = warpsim.make("beacon", 1, backend="cuda").views.pos_x[0]
    expected = values * np.float32(0.5)
    cuda_launcher()(scale, values.size, np.float32(0.5), values)
    assert np.array_equal(values, expected)


def test_every_shipped_environment_launches_numpy_scalars_only():
    for env_id in SHIPPED:
        env = warpsim.make(env_id, 2, backend="cuda")
        for _ in range(2):
            env.step()


def test_a_launch_is_marshalled_once_and_then_replayed_as_it_was(monkeypatch):
    """The Launcher's cache of prepared launches, with a stand-in for the GPU-only preparation."""
    prepared = []

    def prepare(configured, args):
        prepared.append(args)
        return lambda: configured(*args)  # on a GPU: the packed arguments handed to the driver

    monkeypatch.setattr(device, "prepared_launch", prepare)
    values = warpsim.make("beacon", 1, backend="cuda").views.pos_x[0]
    start = values.copy()
    launcher = cuda_launcher()
    assert not launcher.prepare_arguments  # off where nothing is a GPU
    launcher.prepare_arguments = True
    for factor, times in ((np.float32(0.5), 3), (np.float32(2.0), 2)):
        for _ in range(times):
            launcher(scale, values.size, factor, values)
    assert np.array_equal(values, start * np.float32(0.125) * np.float32(4.0))
    assert [args[0] for args in prepared] == [0.5, 2.0]  # once per scalar value, then replayed
    with pytest.raises(InvalidTypeError, match="is the Python float 0.5"):
        launcher(scale, values.size, 0.5, values)  # never prepared, so still refused


def test_a_prepared_launch_the_driver_refuses_falls_back_to_numba(monkeypatch):
    def refused():
        raise TypeError("unsupported kernel argument")

    monkeypatch.setattr(device, "prepared_launch", lambda configured, args: refused)
    values = warpsim.make("beacon", 1, backend="cuda").views.pos_x[0]
    start = values.copy()
    launcher = cuda_launcher()
    launcher.prepare_arguments = True
    for _ in range(3):
        launcher(scale, values.size, np.float32(0.5), values)
    assert np.array_equal(values, start * np.float32(0.125))
    assert [launch for launch, _ in launcher._prepared.values()] == [None]


def test_without_a_gpu_there_is_nothing_to_prepare():
    values = warpsim.make("beacon", 1, backend="cuda").views.pos_x[0]
    configured = scale[1, 8, 0, 0]
    assert device.prepared_launch(configured, (np.float32(1.0), values)) is None


@pytest.mark.parametrize("target", KERNEL_TARGETS)
def test_prepared_launches_step_as_numba_launches_do(target, monkeypatch):
    """On a GPU with the driver's own prepared launches; on the simulator with a stand-in that
    replays the configured kernel (the Launcher's bookkeeping is the same)."""
    require_target(target)
    params = dict(num_taggers=2, num_runners=10, episode_length=6, use_full_observation=False,
                  num_other_agents_observed=3)
    num_envs, steps = (8, 20) if target == "gpu" else (2, 3)
    prepared, plain = (warpsim.make("tag_continuous", num_envs, backend="cuda", seed=3, **params) for _ in range(2))
    if target == "simulator":
        monkeypatch.setattr(device, "prepared_launch", lambda configured, args: lambda: configured(*args))
        prepared._launch.prepare_arguments = True
    plain._launch.prepare_arguments = False
    prepared_by_make = set(plain._launch._prepared)  # make()'s first reset, launched before the switch
    rng = np.random.default_rng(0)
    levels = np.array(prepared.spec.action_levels)
    for _ in range(steps):
        actions = (rng.random(tuple(prepared.actions.shape)) * levels).astype(np.int32)
        prepared.step(actions)
        plain.step(actions)
        for name, tensor in prepared.state.items():
            assert torch.equal(tensor, getattr(plain.state, name)), name
        assert torch.equal(prepared.observations, plain.observations)
        assert torch.equal(prepared.rewards, plain.rewards)
    assert any(launch is not None for launch, _ in prepared._launch._prepared.values())
    assert set(plain._launch._prepared) == prepared_by_make


class RecordsConfiguration:
    """A stand-in kernel that keeps each launch's configuration: (blocks, threads, stream, shared bytes)."""

    def __init__(self):
        self.configurations = []

    def __getitem__(self, configuration):
        self.configurations.append(configuration)
        return lambda *args: None


@pytest.mark.parametrize("items, threads", [(1, 32), (32, 32), (33, 64), (110, 128), (128, 128), (1000, 128)])
def test_a_block_takes_the_fewest_whole_warps_that_cover_its_items_up_to_128(items, threads):
    launcher = numpy_launcher()
    launcher.threads_per_block = 128  # as on a GPU
    kernel = RecordsConfiguration()
    launcher.per_block(kernel, 3, items, 256, np.float32(1))
    assert kernel.configurations == [(3, threads, 0, 256)]
