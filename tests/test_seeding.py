"""One random stream per environment from one seed; resets touch only finished environments."""

import numpy as np
import pytest
import torch

import warpsim

START = ("loc_x", "loc_y", "direction")


def starts(env):
    return np.stack([getattr(env.state, name).cpu().numpy() for name in START])


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_same_seed_same_starts_and_each_environment_its_own(backend):
    first = warpsim.make("tag_continuous", 4, backend=backend, seed=7, num_runners=5)
    again = warpsim.make("tag_continuous", 4, backend=backend, seed=7, num_runners=5)
    other = warpsim.make("tag_continuous", 4, backend=backend, seed=8, num_runners=5)
    np.testing.assert_array_equal(starts(first), starts(again))
    assert not np.array_equal(starts(first), starts(other))
    positions = first.state.loc_x.cpu().numpy()
    assert len({tuple(row) for row in positions}) == 4, "every environment must start differently"
    directions = first.state.direction.cpu().numpy()
    assert np.all(np.isin(np.round(directions / (np.pi / 2), 5), [0, 1, 2, 3]))


def test_a_second_reset_draws_new_starts():
    env = warpsim.make("tag_continuous", 2, backend="numpy", seed=3)
    first = starts(env)
    env.reset()
    assert not np.array_equal(first, starts(env))
    assert env.state.episode.tolist() == [2, 2]


@pytest.mark.parametrize("backend", ["numpy", "cuda"])
def test_auto_reset_touches_only_finished_environments(backend):
    env = warpsim.make("tag_continuous", 3, backend=backend, seed=1, num_runners=4, episode_length=5,
                       tagging_distance=0.0)
    env.state.t.copy_(torch.tensor([4, 0, 2], dtype=torch.int32))
    twin = warpsim.make("tag_continuous", 3, backend=backend, seed=1, num_runners=4, episode_length=50,
                        tagging_distance=0.0)
    env.actions.fill_(2)
    twin.actions.fill_(2)
    env.step()
    twin.step()
    assert env.done.tolist() == [True, False, False]
    assert env.state.t.tolist() == [0, 1, 3]
    assert env.state.episode.tolist() == [2, 1, 1]
    for name in ("loc_x", "loc_y", "speed", "direction"):
        np.testing.assert_array_equal(getattr(env.state, name)[1:].cpu(), getattr(twin.state, name)[1:].cpu())
    assert (env.state.speed[0] == 0).all(), "the finished environment starts a new episode"
    assert torch.isclose(env.observations[0, :, -1], torch.zeros(5)).all(), "its time entry is 0"
    assert not torch.equal(env.state.loc_x[0], twin.state.loc_x[0])
