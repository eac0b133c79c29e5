"""Exact K-nearest-neighbour search on a uniform grid, one block per environment (device code).

A kernel launched with one block per environment calls :func:`bin_agents` with every
thread of the block: a counting sort of the environment's agents into the cells of a
``side x side`` grid over the arena ``[0, L] x [0, L]``. Each thread then answers
queries with :func:`k_nearest`, which searches rings of cells around the query's cell
outwards and stops once no unsearched cell can hold a closer agent. The result is
exactly that of a brute-force search: nearest first, the lower id first at an equal
squared distance (the order of agents inside a cell does not matter, ties are broken by
id), only agents with ``d2 < max_d2``. Every squared distance is
:func:`warpsim.kernels.rounding.squared_distance`, rounded as NumPy rounds it.

The grid lives in dynamic shared memory (:func:`shared_grid`) when it fits, otherwise in
global scratch rows of the caller's (see :mod:`warpsim.kernels.grid_layout`, which sizes
both). Nothing here uses warp intrinsics, so the same code runs on the CUDA simulator.
"""

import math

import numpy as np
from numba import cuda

from warpsim.kernels.indexing import quotient
from warpsim.kernels.nearest_keys import clear_keys, kth_closer_than, offer_key
from warpsim.kernels.rounding import mul, squared_distance, sub

ZERO = np.float32(0)
INFINITY = np.float32(np.inf)
GAP_SLACK = np.float32(2.0 ** -16)
"""Fraction of L taken off the distance to the searched square before it bounds the
unsearched agents: float32 rounding of the cell indices, the cell borders and ``dx``
moves a true distance by a few ulps of L, far less than this."""
BOUND_SHRINK = np.float32(1 - 2.0 ** -12)
"""Shrinks the squared bound again, so that the rounding of ``d2`` itself cannot cross it."""


@cuda.jit(device=True)
def cell_coordinate(value, inverse_cell_size, side):
    """Column (or row) of a coordinate: floor(value * side / L), clamped to [0, side - 1]."""
    scaled = min(max(value * inverse_cell_size, ZERO), np.float32(side - 1))
    return np.int32(scaled)


@cuda.jit(device=True)
def grid_side(count, agents_per_cell, cells_capacity):
    """Side of the grid: about ``agents_per_cell`` agents per cell, at most ``cells_capacity`` cells."""
    cells = min(max(quotient(count, agents_per_cell), 1), cells_capacity)
    side = np.int32(math.sqrt(np.float32(cells)))
    while side * side > cells:
        side -= 1
    while (side + 1) * (side + 1) <= cells:
        side += 1
    return max(side, 1)


@cuda.jit(device=True)
def shared_grid(words, floats, halves, num_agents, cells_capacity, start):
    """The grid's arrays in dynamic shared memory, from word ``start`` on.

    words, floats, halves: the kernel's ``cuda.shared.array(0, t)`` for t = types.int32,
    types.float32 and types.int16, which all alias the same bytes (a device function cannot
    create the arrays it returns, so the kernel declares them; use Numba types: the simulator
    sizes dynamic shared arrays by their item size). The words before ``start`` are the
    kernel's own, e.g. the partial sums of :func:`bin_agents` (``words[0:cuda.blockDim.x]``):
    ``start`` is ``GridLayout.words_per_thread * cuda.blockDim.x``. Returns
    ``(xs, ys, cell_end, ids)``: float32[N], float32[N], int32[cells_capacity], int16[N].
    The launch must give ``GridLayout.shared_bytes`` of dynamic shared memory.
    """
    xs = floats[start:start + num_agents]
    ys = floats[start + num_agents:start + 2 * num_agents]
    cells_start = start + 2 * num_agents
    cell_end = words[cells_start:cells_start + cells_capacity]
    ids_start = 2 * (cells_start + cells_capacity)
    ids = halves[ids_start:ids_start + num_agents]
    return xs, ys, cell_end, ids


@cuda.jit(device=True)
def bin_agents(e, first, end, member, loc_x, loc_y, length, agents_per_cell,
               partial, xs, ys, cell_end, ids):
    """Counting sort of agents ``first .. end-1`` of environment ``e`` with ``member[e, j] == 1``.

    Every thread of the block must call it (it synchronises the block). member int32[E, N];
    loc_x, loc_y float32[E, N]; length float32 (the arena is [0, L] x [0, L]);
    agents_per_cell int32; partial int32[>= blockDim.x]; xs, ys float32[>= N];
    cell_end int32[C] (C cells at most); ids int16 or int32[>= N] (written).
    Returns ``(count, side)``: the agents binned and the grid's side; cell ``c`` (row-major,
    ``c = row * side + column``) holds sorted entries ``cell_end[c - 1]`` (0 for c = 0)
    to ``cell_end[c] - 1`` of xs, ys and ids.
    """
    thread = cuda.threadIdx.x
    threads = cuda.blockDim.x
    own = 0
    j = first + thread
    while j < end:
        if member[e, j] == 1:
            own += 1
        j += threads
    partial[thread] = own
    cuda.syncthreads()
    count = 0
    for t in range(threads):
        count += partial[t]
    side = grid_side(count, agents_per_cell, cell_end.shape[0])
    cells = side * side
    inverse_cell_size = np.float32(side) / length
    c = thread
    while c < cells:
        cell_end[c] = 0
        c += threads
    cuda.syncthreads()
    j = first + thread
    while j < end:
        if member[e, j] == 1:
            cell = (cell_coordinate(loc_y[e, j], inverse_cell_size, side) * side
                    + cell_coordinate(loc_x[e, j], inverse_cell_size, side))
            cuda.atomic.add(cell_end, cell, 1)
        j += threads
    cuda.syncthreads()
    # Exclusive scan of the counts: each thread sums a run of cells, then offsets it.
    run = quotient(cells + threads - 1, threads)
    low = min(thread * run, cells)
    high = min(low + run, cells)
    total = 0
    for c in range(low, high):
        total += cell_end[c]
    partial[thread] = total
    cuda.syncthreads()
    offset = 0
    for t in range(thread):
        offset += partial[t]
    for c in range(low, high):
        size = cell_end[c]
        cell_end[c] = offset
        offset += size
    cuda.syncthreads()
    # Scatter: each atomic hands out the next place of a cell and leaves cell_end[c] at its end.
    j = first + thread
    while j < end:
        if member[e, j] == 1:
            x = loc_x[e, j]
            y = loc_y[e, j]
            cell = cell_coordinate(y, inverse_cell_size, side) * side + cell_coordinate(x, inverse_cell_size, side)
            place = cuda.atomic.add(cell_end, cell, 1)
            xs[place] = x
            ys[place] = y
            ids[place] = j
        j += threads
    cuda.syncthreads()
    return count, side


@cuda.jit(device=True)
def scan_cells(first_cell, last_cell, qx, qy, skip, max_d2, xs, ys, cell_end, ids, keys):
    """Offers every agent of cells first_cell .. last_cell (one row, contiguous) as a candidate."""
    start = 0
    if first_cell > 0:
        start = cell_end[first_cell - 1]
    for s in range(start, cell_end[last_cell]):
        j = np.int32(ids[s])
        if j != skip:
            d2 = squared_distance(xs[s] - qx, ys[s] - qy)
            if d2 < max_d2:
                offer_key(keys, d2, j)


@cuda.jit(device=True)
def k_nearest(qx, qy, skip, max_d2, side, length, xs, ys, cell_end, ids, keys):
    """The K nearest binned agents of the point (qx, qy), other than agent ``skip``, with d2 < max_d2.

    qx, qy float32; skip int32 (-1 skips nobody); max_d2 float32 (inf: no limit); side int32
    and the grid arrays from :func:`bin_agents`; keys uint64[K] (written: the packed keys of
    :mod:`warpsim.kernels.nearest_keys`, ascending, so lower id first on a tie).
    """
    inverse_cell_size = np.float32(side) / length
    cell_size = length / np.float32(side)
    slack = length * GAP_SLACK
    last = side - 1
    cx = cell_coordinate(qx, inverse_cell_size, side)
    cy = cell_coordinate(qy, inverse_cell_size, side)
    reach = max(max(cx, last - cx), max(cy, last - cy))
    clear_keys(keys)
    for r in range(reach + 1):
        # Ring r: the cells at Chebyshev distance r from (cx, cy). Its top and bottom rows are one
        # span each, every row between holds two cells; one call site keeps the search inlined once.
        first_row = max(cy - r, 0)
        for part in range(2 * (min(cy + r, last) - first_row + 1)):
            row = first_row + (part >> 1)
            if row == cy - r or row == cy + r:
                low = max(cx - r, 0)
                high = min(cx + r, last)
                if part & 1 == 1:
                    continue
            else:
                low = cx - r if part & 1 == 0 else cx + r
                high = low
                if low < 0 or low > last:
                    continue
            scan_cells(row * side + low, row * side + high, qx, qy, skip, max_d2, xs, ys, cell_end, ids, keys)
        if r == reach:
            break
        # Every unsearched agent lies beyond a side of the searched square that has cells behind it
        # (rounded operations: the bound's error analysis assumes no fused multiply-add).
        gap = INFINITY
        if cx - r > 0:
            gap = min(gap, sub(qx, mul(np.float32(cx - r), cell_size)))
        if cx + r < last:
            gap = min(gap, sub(mul(np.float32(cx + r + 1), cell_size), qx))
        if cy - r > 0:
            gap = min(gap, sub(qy, mul(np.float32(cy - r), cell_size)))
        if cy + r < last:
            gap = min(gap, sub(mul(np.float32(cy + r + 1), cell_size), qy))
        gap = gap - slack
        if gap > ZERO:
            bound = gap * gap * BOUND_SHRINK
            # Strictly below: an unsearched agent at exactly the k-th distance could have a lower id.
            if max_d2 <= bound or kth_closer_than(keys, bound):
                break
