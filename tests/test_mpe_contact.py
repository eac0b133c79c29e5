"""MPE's contact force out of contact: the kernels skip a pair farther apart than touching by more than
``OUT_OF_CONTACT`` (warpsim.kernels.mpe.contact_device), where the force is exactly 0, so their sums keep the
reference's bits, which adds every pair."""

import numpy as np
import pytest
from helpers import require_target
from test_mpe_grids import assert_equal, twins

from warpsim.kernels.mpe import OUT_OF_CONTACT, contact

REACHES = {"simple_spread": (0.3,), "simple_tag": (0.15, 0.125, 0.1)}
"""The contact distances of the scenarios' pairs of agents (simple_tag: two adversaries, an adversary and a
good agent, two good agents)."""
OBSTACLE_REACHES = (0.275, 0.25)
"""simple_tag's agents touching an obstacle."""


def far(reach: float) -> np.float32:
    return np.float32(reach) + OUT_OF_CONTACT


@pytest.mark.parametrize("reach", [*REACHES["simple_spread"], *REACHES["simple_tag"], *OBSTACLE_REACHES])
def test_beyond_the_skipped_distance_the_contact_force_is_exactly_zero(reach):
    """Every float32 offset whose squared distance passes the kernels' test gives a force of exactly 0, from
    the first such distance to 100 units, in every direction (the NumPy twin computes the kernels' bits)."""
    edge = far(reach)
    first = np.float32(np.sqrt(np.float32(edge * edge)))
    distances = np.concatenate([first + np.arange(-4, 2000, dtype=np.float32) * np.spacing(first),
                                np.geomspace(first, 100, 2000, dtype=np.float32)])
    angles = np.linspace(0, 2 * np.pi, 37, dtype=np.float32)[:, None]
    dx, dy = (distances * np.cos(angles)).astype(np.float32), (distances * np.sin(angles)).astype(np.float32)
    skipped = edge * edge < dx * dx + dy * dy
    assert skipped.mean() > 0.99
    force_x, force_y = contact(dx, dy, np.float32(reach))
    assert np.all(force_x[skipped] == 0) and np.all(force_y[skipped] == 0)


def test_nearer_than_the_skipped_distance_the_force_can_be_felt():
    """Touching distance plus 0.079: the softplus is taken above -80 and pushes (so OUT_OF_CONTACT is no
    wider than it needs to be by much)."""
    force_x, _ = contact(np.float32(0.3 + 0.079), np.float32(0), np.float32(0.3))
    assert force_x > 0


def pairs_at_the_edge(scenario: str, num_envs: int, n: int, rng) -> dict:
    """Agents in pairs, each pair alone on its row (rows 3 apart), at a distance just inside, at and just
    beyond where the kernels stop computing the force, for each contact distance of the scenario."""
    gaps = np.array([gap for reach in REACHES[scenario] for edge in [far(reach)] for gap in (
        edge - np.float32(2e-3), np.nextafter(edge, np.float32(0)), edge, np.nextafter(edge, np.float32(1)),
        edge + np.float32(1e-4), np.float32(reach) + np.float32(0.0795))], np.float32)
    pos_x, pos_y = np.zeros((2, num_envs, n), np.float32)
    pos_x[:, 1::2] = rng.choice(gaps, (num_envs, n // 2))
    pos_y[:] = np.float32(3) * (np.arange(n) // 2)
    if scenario == "simple_tag":  # the obstacles out of the way
        return dict(pos_x=pos_x, pos_y=pos_y - np.float32(40), obstacle_x=np.full((num_envs, 2), 50, np.float32),
                    obstacle_y=np.full((num_envs, 2), 50, np.float32))
    return dict(pos_x=pos_x, pos_y=pos_y, landmark_x=rng.uniform(-1, 1, (num_envs, n)).astype(np.float32),
                landmark_y=rng.uniform(-1, 1, (num_envs, n)).astype(np.float32))


@pytest.mark.parametrize("scenario, params", [("simple_spread", dict(N=12)),
                                              ("simple_tag", dict(num_adversaries=5, num_good=7))])
def test_pairs_at_the_edge_of_contact_push_as_the_reference_computes(scenario, params):
    from helpers import write_state

    require_target("simulator")
    reference, kernels = twins(scenario, 3, 5, max_cycles=3, **params)
    state = pairs_at_the_edge(scenario, 3, reference.num_agents, np.random.default_rng(5))
    state.update(vel_x=np.zeros_like(state["pos_x"]), vel_y=np.zeros_like(state["pos_x"]))
    for env in (reference, kernels):
        write_state(env, state)
    still = np.zeros(tuple(reference.actions.shape), reference.actions.numpy().dtype)
    for env in (reference, kernels):
        env.step(still, auto_reset=False)
    assert np.any(reference.state.vel_x.numpy() != 0), "some pairs push"
    assert_equal(reference, kernels, "after a still step from pairs at the edge of contact")
