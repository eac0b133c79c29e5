"""Zero-copy sharing: torch, the kernels (and CuPy on a GPU) see the same bytes."""

import numpy as np
import pytest
import torch

import warpsim
from warpsim.device import device_pointer

SHARED = ("observations", "actions", "rewards", "done")


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_kernel_views_share_the_tensors_memory(backend):
    env = warpsim.make("tag_continuous", 2, backend=backend, num_runners=3)
    for name in SHARED:
        assert device_pointer(getattr(env.views, name)) == getattr(env, name).data_ptr(), name
    for name in env.state:
        assert device_pointer(getattr(env.views, name)) == getattr(env.state, name).data_ptr(), name


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_a_step_overwrites_the_same_tensors_in_place(backend):
    env = warpsim.make("tag_continuous", 2, backend=backend, num_runners=3, episode_length=50)
    observations, rewards, done = env.observations, env.rewards, env.done
    pointers = [t.data_ptr() for t in (observations, rewards, done, env.state.loc_x)]
    before = observations.clone()
    env.actions.fill_(9)  # a positive acceleration, written through torch, read by the step
    returned = env.step()
    assert returned[0] is observations and returned[1] is rewards and returned[2] is done
    assert [t.data_ptr() for t in (observations, rewards, done, env.state.loc_x)] == pointers
    assert not torch.equal(before, observations)
    assert (env.state.speed > 0).all()


def test_state_cannot_be_rebound_only_written():
    env = warpsim.make("tag_continuous", 1, backend="numpy", num_runners=2)
    with pytest.raises(AttributeError, match="in place"):
        env.state.loc_x = torch.zeros(1, 3)
    env.state.loc_x[0, 0] = 1.25
    assert env.views.loc_x[0, 0] == np.float32(1.25)


@pytest.mark.gpu
def test_cupy_sees_the_same_device_memory():
    cupy = pytest.importorskip("cupy")
    env = warpsim.make("tag_continuous", 4, backend="cuda", num_runners=5)
    for name in SHARED:
        tensor = getattr(env, name)
        assert cupy.asarray(tensor).data.ptr == tensor.data_ptr() == device_pointer(getattr(env.views, name))
    observations = cupy.asarray(env.observations)
    before = observations.copy()
    env.step()
    assert not bool(cupy.all(before == observations))


def test_reset_with_a_mask_starts_only_those_environments_anew():
    env = warpsim.make("tag_gridworld", 3, backend="numpy", seed=4, num_taggers=2, episode_length=50)
    for _ in range(3):
        env.step(torch.ones_like(env.actions))
    before = env.state.t.clone()
    env.reset(torch.tensor([False, True, False]))
    assert env.state.t.tolist() == [before[0].item(), 0, before[2].item()]
    assert env.state.episode.tolist() == [1, 2, 1]
    with pytest.raises(ValueError, match=r"reset mask has shape \(2,\).*expected bool\[3\]"):
        env.reset(torch.tensor([True, False]))


@pytest.mark.parametrize("name", SHARED)
def test_the_shared_buffers_cannot_be_rebound(name):
    # Rebinding would leave the kernels on the old buffer while the caller writes a new one.
    env = warpsim.make("tag_continuous", 1, backend="numpy", num_runners=2)
    buffer = getattr(env, name)
    with pytest.raises(AttributeError, match=rf"cannot rebind env\.{name}.*copy_"):
        setattr(env, name, torch.full_like(buffer, 1))
    assert getattr(env, name) is buffer


def test_actions_are_written_in_place_or_passed_to_step():
    env = warpsim.make("tag_continuous", 1, backend="numpy", num_runners=2)
    with pytest.raises(AttributeError, match=r"env\.actions\.copy_\(.*env\.step\(actions\)"):
        env.actions = torch.full(env.actions.shape, 1)
    env.actions.copy_(torch.full(env.actions.shape, 9))
    env.step()
    assert (env.state.speed > 0).all()
