"""What the multi-particle scenarios (envs/simple_*) share: MPE's world constants, the clock, a reset of
agents at rest, MPE's contact force, the offsets an observation lists and the box their grid searches
bin, as device code with NumPy twins where a reference needs them."""

import functools
import math

import numpy as np
from numba import cuda, types

from warpsim.kernels.exponential import softplus, softplus_device
from warpsim.kernels.indexing import agent_of_thread
from warpsim.kernels.nearest_keys import EMPTY_KEY, key_id, nearest_after, pop_nearest
from warpsim.kernels.neighbours import shared_grid, words_after_grid
from warpsim.kernels.random import reset_uniform_device
from warpsim.kernels.rounding import add, mul, squared_distance, sub

DT = np.float32(0.1)
"""MPE's world step, in seconds."""
KEPT_VELOCITY = np.float32(0.75)
"""1 - MPE's damping of 0.25: the share of its velocity a body keeps each step."""
CONTACT_FORCE = np.float32(100.0)
CONTACT_MARGIN = np.float32(1e-3)
"""k of the contact force's softplus: 100 x k softplus(-(distance - contact distance) / k) along the line of centres."""
OUT_OF_CONTACT = np.float32(0.081)
"""Farther than the contact distance by more than this, the contact force is exactly 0: its softplus is taken
below -80 (0.08 / CONTACT_MARGIN), where warpsim.kernels.exponential gives 0, with room for rounding."""
FLOAT32_MAX = np.float32(np.finfo(np.float32).max)
SENSITIVITY = np.float32(5.0)
"""The force of a unit action where a scenario gives its agents no acceleration of their own."""
BODY_DRAWS = 2
"""Random numbers a body draws at a reset, its x and y (``reset_agents``)."""
MOVES_X = np.array([0, -1, 1, 0, 0], np.float32)
"""x of each discrete action's force (MPE: 0 none, 1 left, 2 right, 3 down, 4 up), times the agent's acceleration."""
MOVES_Y = np.array([0, 0, 0, -1, 1], np.float32)
ZERO = np.float32(0)
ONE = np.float32(1)
TWO = np.float32(2)
BOX_ORIGIN = np.float32(-1)
BOX_LENGTH = np.float32(2)
"""The box [-1, 1]^2 where bodies start: the grids of the scenarios' searches (warpsim.kernels.neighbours) cover
it, and bin a body that strays beyond it at its edge (the searches stay exact)."""


def searched(d2: np.ndarray) -> np.ndarray:
    """The squared distances (float32) a nearest-first search finds, those below inf, and inf for the rest: as
    the kernels' searches (``nearest_after``, warpsim.kernels.neighbours), the references find no body at NaN
    (two agents met at one point)."""
    return np.where(d2 < np.inf, d2, np.float32(np.inf))


def nearest_first(d2: np.ndarray, count: int) -> np.ndarray:
    """int64[..., min(count, M)]: the columns of ``d2``'s last axis (M, no NaN), nearest first, the lower column
    first at a tie: ``np.argsort(d2, axis=-1, kind="stable")[..., :count]``, without sorting all M columns (at
    N = 1000, the full sorts were half of simple_spread's reference step)."""
    columns = d2.shape[-1]
    if not 0 < count < columns:
        return np.argsort(d2, axis=-1, kind="stable")[..., :count]
    kth = np.partition(d2, count - 1, axis=-1)[..., count - 1:count]
    below, at = d2 < kth, d2 == kth
    # of the columns at the count-th distance, the lowest that the nearer ones leave room for
    kept = below | at & (np.cumsum(at, axis=-1) <= count - below.sum(axis=-1, keepdims=True))
    chosen = np.nonzero(kept)[-1].reshape(*d2.shape[:-1], count)  # each row's, lowest column first
    order = np.argsort(np.take_along_axis(d2, chosen, -1), axis=-1, kind="stable")
    return np.take_along_axis(chosen, order, -1)


@cuda.jit
def advance_clock(max_cycles, t, done):
    """t += 1 and the done flags. max_cycles int32; t int32[E]; done bool[E]."""
    e = cuda.grid(1)
    if e < t.shape[0]:
        t[e] += 1
        done[e] = t[e] >= max_cycles


@cuda.jit(device=True)
def contact_device(force_x, force_y, dx, dy, reach):
    """(force_x, force_y) plus the contact force on a body at offset (dx, dy) from another, touching below ``reach``;
    twin of ``contact``.

    A body out of contact (finitely far) adds an exact zero, which leaves a sum that is never -0 unchanged: it is
    skipped, with its square root, exponential and divisions, and the sums keep ``contact``'s bits.
    """
    d2 = squared_distance(dx, dy)
    far = add(reach, OUT_OF_CONTACT)
    if mul(far, far) < d2 <= FLOAT32_MAX:
        return force_x, force_y
    distance = math.sqrt(d2)
    penetration = mul(softplus_device(-sub(distance, reach) / CONTACT_MARGIN), CONTACT_MARGIN)
    return (add(force_x, mul(mul(CONTACT_FORCE, dx) / distance, penetration)),
            add(force_y, mul(mul(CONTACT_FORCE, dy) / distance, penetration)))


def contact(dx: np.ndarray, dy: np.ndarray, reach) -> tuple[np.ndarray, np.ndarray]:
    """The contact force (x, y) on bodies at offsets (dx, dy) from others, touching below ``reach`` (float32 arrays,
    broadcast); two bodies at one point give NaN, as in MPE2."""
    distance = np.sqrt(dx * dx + dy * dy)
    with np.errstate(divide="ignore", invalid="ignore"):
        penetration = softplus(-(distance - reach) / CONTACT_MARGIN) * CONTACT_MARGIN
        return CONTACT_FORCE * dx / distance * penetration, CONTACT_FORCE * dy / distance * penetration


@cuda.jit
def reset_agents(mask, seed, episode, pos_x, pos_y, vel_x, vel_y, t):
    """New agents at rest, uniform in [-1, 1]^2 (agent i draws as agent i), where ``mask`` is set.

    mask bool[E]; seed uint64; episode int32[E]; pos_x, pos_y, vel_x, vel_y float32[E, N]; t int32[E].
    """
    num_envs, n = pos_x.shape
    e, i = agent_of_thread(n)
    if e >= num_envs or not mask[e]:
        return
    pos_x[e, i] = sub(mul(reset_uniform_device(seed, e, episode[e], i, 0, BODY_DRAWS), TWO), ONE)
    pos_y[e, i] = sub(mul(reset_uniform_device(seed, e, episode[e], i, 1, BODY_DRAWS), TWO), ONE)
    vel_x[e, i] = ZERO
    vel_y[e, i] = ZERO
    if i == 0:
        t[e] = 0


@cuda.jit(device=True)
def write_offsets(observations, e, i, at, slots, nearest_first, qx, qy, xs_e, ys_e, skip):
    """The offsets of the entities of xs_e, ys_e from (qx, qy) at observations[e, i, at:]: each in index order
    (leaving out ``skip``), or the ``slots`` nearest, nearest first, zeros where none is left; the next index."""
    if nearest_first:
        floor = np.uint64(0)
        for _ in range(slots):
            key = nearest_after(floor, qx, qy, xs_e, ys_e, skip)
            write_keyed_offset(observations, e, i, at, key, qx, qy, xs_e, ys_e)
            if key != EMPTY_KEY:
                floor = key + np.uint64(1)
            at += 2
        return at
    for j in range(xs_e.shape[0]):
        if j != skip:
            observations[e, i, at] = sub(xs_e[j], qx)
            observations[e, i, at + 1] = sub(ys_e[j], qy)
            at += 2
    return at


@cuda.jit(device=True)
def write_listed_offsets(observations, e, i, at, slots, keys, qx, qy, xs_e, ys_e):
    """The offsets from (qx, qy) of the entities of a K-nearest list (keys uint64[K], taken off it nearest
    first) at observations[e, i, at:], in ``slots`` slots, zeros past those it holds; the next index."""
    for _ in range(slots):
        write_keyed_offset(observations, e, i, at, pop_nearest(keys), qx, qy, xs_e, ys_e)
        at += 2
    return at


@cuda.jit(device=True)
def write_keyed_offset(observations, e, i, at, key, qx, qy, xs_e, ys_e):
    """The offset from (qx, qy) of the entity of ``key`` (warpsim.kernels.nearest_keys) at
    observations[e, i, at:at + 2], zeros for EMPTY_KEY."""
    dx, dy = ZERO, ZERO
    if key != EMPTY_KEY:
        j = key_id(key)
        dx, dy = sub(xs_e[j], qx), sub(ys_e[j], qy)
    observations[e, i, at] = dx
    observations[e, i, at + 1] = dy


@functools.cache
def two_grids(in_shared: bool):
    """The device function that places a block's two grids (warpsim.kernels.neighbours) of one environment:
    in dynamic shared memory after the block's partial sums, the second after the first, or (``in_shared``
    False, fixed when the kernel compiles) in rows of the global scratch."""

    @cuda.jit(device=True)
    def place_grids(e, first_count, first_cells_capacity, second_count, second_cells_capacity, first_scratch,
                    second_scratch):
        """The (xs, ys, cell_end, ids) of environment e's two grids, of ``first_count`` and ``second_count``
        bodies at most. first_scratch, second_scratch: (x, y, ids, cells) float32[E, M] twice, int32[E, M] and
        int32[E, C], the global scratch, read only where the grids are not in shared memory."""
        if in_shared:
            threads = cuda.blockDim.x
            words = cuda.shared.array(0, types.int32)
            floats = cuda.shared.array(0, types.float32)
            halves = cuda.shared.array(0, types.int16)
            first = shared_grid(words, floats, halves, first_count, first_cells_capacity, threads)
            second = shared_grid(words, floats, halves, second_count, second_cells_capacity,
                                 words_after_grid(first_count, first_cells_capacity, threads))
            return first, second
        x, y, ids, cells = first_scratch
        second_x, second_y, second_ids, second_cells = second_scratch
        return (x[e], y[e], cells[e], ids[e]), (second_x[e], second_y[e], second_cells[e], second_ids[e])

    return place_grids
