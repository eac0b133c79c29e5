"""Exact K-nearest-neighbour search on a uniform grid, one block per environment (device code).

A kernel launched with one block per environment calls :func:`bin_agents` with every
thread of the block: a counting sort of the environment's agents into the cells of a
``side x side`` grid over the box ``[o, o + L] x [o, o + L]``. Each thread then answers
queries with :func:`k_nearest`, which searches rings of cells around the query's cell
outwards and stops once no unsearched cell can hold a closer agent. The result is
exactly that of a brute-force search: nearest first, the lower id first at an equal
squared distance (the order of agents inside a cell does not matter, ties are broken by
id), only agents with ``d2 < max_d2`` (so never one at a NaN distance). Every squared distance is
:func:`warpsim.kernels.rounding.squared_distance`, rounded as NumPy rounds it. Agents and
queries may lie outside the box: they are binned in the cell nearest them, and the results stay
exact. :func:`count_within` counts the agents within a distance, the same way.

The cells are numbered strip by strip (:func:`cell_index`): strips of ``STRIP_WIDTH``
columns, each walked row by row, down the even strips and up the odd ones. Consecutive
cells are neighbours, so the queries that consecutive threads take in the binned order lie
in a compact patch of the arena, and any run of rows of one strip is one run of cells.

:func:`k_nearest_in_tile` is the warp-uniform search: the threads of a group (a warp on a
GPU) search the same tile of cells, the smallest rectangle of whole strips around all their
queries widened by ``TILE_MARGIN`` cells, reading the same candidates in the same order (a
run of cells per strip); each thread then checks its own exact stopping bound, and one whose
K nearest might lie outside the tile searches a wider tile.

The grid lives in dynamic shared memory (:func:`shared_grid`) when it fits, otherwise in
global scratch rows of the caller's (see :mod:`warpsim.kernels.grid_layout`, which sizes
both). Nothing here uses warp intrinsics, so the same code runs on the CUDA simulator.
"""

import math

import numpy as np
from numba import cuda

from warpsim.device import WARP_SIZE
from warpsim.kernels.indexing import quotient
from warpsim.kernels.nearest_keys import clear_keys, kth_closer_than, offer_key
from warpsim.kernels.rounding import add, mul, squared_distance, sub

STRIP_SHIFT = 1
STRIP_WIDTH = 1 << STRIP_SHIFT
"""Columns of cells in a strip of the cells' order."""
LAST_IN_STRIP = STRIP_WIDTH - 1
TILE_MARGIN = 2
"""Cells a group's tile reaches beyond its queries' cells on each side, a whole number of
strips. With the grid's K / 3 agents a cell, two leave a query's K nearest inside the tile
nearly always; one makes lanes search again, three reads more (benchmarks/search_work.py)."""
GROUP_SIZE = WARP_SIZE
"""Threads that search one tile: a warp, so that its threads run the same loop in step."""
NO_CELL = np.int32(-1)
COLUMN_BITS = 16
COLUMN_MASK = (1 << COLUMN_BITS) - 1
ZERO = np.float32(0)
INFINITY = np.float32(np.inf)
GAP_SLACK = np.float32(2.0 ** -16)
"""Fraction of the search's scale (L, or the query's distance from the box's corner where that is
more) taken off the distance to the searched square before it bounds the unsearched agents: float32
rounding of the cell indices, the cell borders and ``dx`` moves a true distance by a few ulps of
that scale, far less than this."""
BOUND_SHRINK = np.float32(1 - 2.0 ** -12)
"""Shrinks the squared bound again, so that the rounding of ``d2`` itself cannot cross it."""


@cuda.jit(device=True)
def cell_coordinate(value, origin, inverse_cell_size, side):
    """Column (or row) of a coordinate: floor((value - o) * side / L), clamped to [0, side - 1] (0 for NaN).

    A point outside the box is binned in the cell nearest it: the searches stay exact, since
    every bound they take from the cells' borders still holds of the true positions."""
    scaled = sub(value, origin) * inverse_cell_size
    if not scaled > ZERO:
        return np.int32(0)
    return np.int32(min(scaled, np.float32(side - 1)))


@cuda.jit(device=True)
def border(index, origin, cell_size):
    """The lower border of column (or row) ``index``: o + index x the cell's size."""
    return add(origin, mul(np.float32(index), cell_size))


@cuda.jit(device=True)
def gap_slack(qx, qy, origin, length):
    """What :func:`search_is_complete` takes off a gap from the query (qx, qy): ``GAP_SLACK`` of L, or
    of the query's distance from the box's corner where that is more (a far query rounds more)."""
    return max(max(length, abs(origin)), max(abs(sub(qx, origin)), abs(sub(qy, origin)))) * GAP_SLACK


@cuda.jit(device=True)
def is_member(member, e, j):
    """Whether agent j of environment e is binned: member[e, j] == 1, or every agent where member is None."""
    if member is None:
        return True
    return member[e, j] == 1


@cuda.jit(device=True)
def cell_index(column, row, side):
    """The number of cell (column, row) in the strip-by-strip snake order of the module's docstring."""
    strip = column >> STRIP_SHIFT
    first_column = strip << STRIP_SHIFT
    width = min(STRIP_WIDTH, side - first_column)
    position = row if strip & 1 == 0 else side - 1 - row
    return strip * STRIP_WIDTH * side + position * width + column - first_column


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
def words_after_grid(num_agents, cells_capacity, start):
    """The first whole int32 word after the arrays :func:`shared_grid` places from word ``start``."""
    return start + 2 * num_agents + cells_capacity + ((num_agents + 1) >> 1)


@cuda.jit(device=True)
def bin_agents(e, first, end, member, loc_x, loc_y, length, agents_per_cell, partial, xs, ys, cell_end, ids,
               origin=ZERO):
    """Counting sort of agents ``first .. end-1`` of environment ``e`` with ``member[e, j] == 1``.

    Every thread of the block must call it (it synchronises the block). member int32[E, N], or None
    to bin every agent; loc_x, loc_y float32[E, N]; length float32 (the box is [o, o + L]^2, origin o
    float32, 0 unless given);
    agents_per_cell int32; partial int32[>= blockDim.x]; xs, ys float32[>= N];
    cell_end int32[C] (C cells at most); ids int16 or int32[>= N] (written).
    Returns ``(count, side)``: the agents binned and the grid's side; cell ``c`` (``c =
    cell_index(column, row, side)``) holds sorted entries ``cell_end[c - 1]`` (0 for c = 0)
    to ``cell_end[c] - 1`` of xs, ys and ids.
    """
    thread = cuda.threadIdx.x
    threads = cuda.blockDim.x
    own = 0
    j = first + thread
    while j < end:
        if is_member(member, e, j):
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
        if is_member(member, e, j):
            cell = cell_index(cell_coordinate(loc_x[e, j], origin, inverse_cell_size, side),
                              cell_coordinate(loc_y[e, j], origin, inverse_cell_size, side), side)
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
        if is_member(member, e, j):
            x = loc_x[e, j]
            y = loc_y[e, j]
            cell = cell_index(cell_coordinate(x, origin, inverse_cell_size, side),
                              cell_coordinate(y, origin, inverse_cell_size, side), side)
            place = cuda.atomic.add(cell_end, cell, 1)
            xs[place] = x
            ys[place] = y
            ids[place] = j
        j += threads
    cuda.syncthreads()
    return count, side


@cuda.jit(device=True)
def scan_cells(first_cell, last_cell, qx, qy, skip, max_d2, xs, ys, cell_end, ids, keys):
    """Offers every agent of cells first_cell .. last_cell (contiguous in the cells' order) as a candidate."""
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
def k_nearest(qx, qy, skip, max_d2, side, length, xs, ys, cell_end, ids, keys, origin=ZERO):
    """The K nearest binned agents of the point (qx, qy), other than agent ``skip``, with d2 < max_d2.

    qx, qy float32 (anywhere, in the box or not); skip int32 (-1 skips nobody); max_d2 float32 (inf:
    no limit); side int32, the box (length, origin) and the grid arrays from :func:`bin_agents`;
    keys uint64[K] (written: the packed keys of :mod:`warpsim.kernels.nearest_keys`, ascending, so
    lower id first on a tie).
    """
    inverse_cell_size = np.float32(side) / length
    cell_size = length / np.float32(side)
    slack = gap_slack(qx, qy, origin, length)
    last = side - 1
    cx = cell_coordinate(qx, origin, inverse_cell_size, side)
    cy = cell_coordinate(qy, origin, inverse_cell_size, side)
    reach = max(max(cx, last - cx), max(cy, last - cy))
    clear_keys(keys)
    for r in range(reach + 1):
        # Ring r: the 8r cells at Chebyshev distance r from (cx, cy) (one for r = 0), its top row, its
        # bottom row, then the two cells of each row between; one call site keeps the search inlined once.
        for part in range(max(8 * r, 1)):
            if part <= 2 * r:
                column = cx - r + part
                row = cy - r
            elif part <= 4 * r + 1:
                column = cx - r + part - 2 * r - 1
                row = cy + r
            else:
                between = part - 4 * r - 2
                row = cy - r + 1 + (between >> 1)
                column = cx - r if between & 1 == 0 else cx + r
            if column >= 0 and column <= last and row >= 0 and row <= last:
                cell = cell_index(column, row, side)
                scan_cells(cell, cell, qx, qy, skip, max_d2, xs, ys, cell_end, ids, keys)
        if r == reach:
            break
        if search_is_complete(keys, max_d2, unsearched_gap(qx, qy, cx - r, cx + r, cy - r, cy + r, side, origin,
                                                                cell_size),
                              slack):
            break


@cuda.jit(device=True)
def count_within(qx, qy, skip, reach, side, length, xs, ys, cell_end, ids, origin=ZERO):
    """How many binned agents other than ``skip`` lie closer to (qx, qy) than ``reach`` (float32 > 0): whose
    distance, the square root of their float32 squared distance, is below it. It searches the cells of the
    square of half-side ``reach`` around the point, widened by the rounding's slack; the rest as k_nearest."""
    inverse_cell_size = np.float32(side) / length
    widest = add(reach, gap_slack(qx, qy, origin, length))
    low_column = cell_coordinate(sub(qx, widest), origin, inverse_cell_size, side)
    high_column = cell_coordinate(add(qx, widest), origin, inverse_cell_size, side)
    low_row = cell_coordinate(sub(qy, widest), origin, inverse_cell_size, side)
    high_row = cell_coordinate(add(qy, widest), origin, inverse_cell_size, side)
    count = 0
    for row in range(low_row, high_row + 1):
        for column in range(low_column, high_column + 1):
            cell = cell_index(column, row, side)
            start = 0
            if cell > 0:
                start = cell_end[cell - 1]
            for s in range(start, cell_end[cell]):
                if np.int32(ids[s]) != skip and math.sqrt(squared_distance(xs[s] - qx, ys[s] - qy)) < reach:
                    count += 1
    return count


@cuda.jit(device=True)
def k_nearest_in_tile(qx, qy, skip, tile, side, length, xs, ys, cell_end, ids, keys, origin=ZERO):
    """:func:`k_nearest` without a distance cutoff, searching the tile of the thread's group
    (:func:`group_tile`, which holds the point's cell) run by run of whole strips. Where an agent
    outside the tile could be closer than the K-th, the thread searches again a tile widened by
    ``TILE_MARGIN`` cells each way, and so on (the whole grid at worst, which always decides).
    tile: (low_column, high_column, low_row, high_row), ints; the rest as :func:`k_nearest`.
    Returns how many tiles it searched (int): 1 where the group's tile decided."""
    low_column, high_column, low_row, high_row = tile
    cell_size = length / np.float32(side)
    slack = gap_slack(qx, qy, origin, length)
    last = side - 1
    searches = 0
    while True:
        searches += 1
        clear_keys(keys)
        for strip in range(low_column >> STRIP_SHIFT, (high_column >> STRIP_SHIFT) + 1):
            # The tile's rows of a whole strip are one run of cells, walked down or up.
            first_column = strip << STRIP_SHIFT
            last_column = min(first_column + LAST_IN_STRIP, last)
            first_cell = min(cell_index(first_column, low_row, side), cell_index(first_column, high_row, side))
            last_cell = max(cell_index(last_column, low_row, side), cell_index(last_column, high_row, side))
            scan_cells(first_cell, last_cell, qx, qy, skip, INFINITY, xs, ys, cell_end, ids, keys)
        if search_is_complete(keys, INFINITY, unsearched_gap(qx, qy, low_column, high_column, low_row, high_row, side,
                                                             origin, cell_size), slack):
            return searches
        low_column, high_column, low_row, high_row = widened((low_column, high_column, low_row, high_row), side)


@cuda.jit(device=True)
def unsearched_gap(qx, qy, low_column, high_column, low_row, high_row, side, origin, cell_size):
    """Distance from (qx, qy) to the nearest side of the searched rectangle of cells (columns
    low_column .. high_column, rows low_row .. high_row, around the query's cell) that has cells
    behind it: every unsearched agent lies at least this far. inf where nothing is unsearched.
    Rounded operations: the bound's error analysis assumes no fused multiply-add."""
    last = side - 1
    gap = INFINITY
    if low_column > 0:
        gap = min(gap, sub(qx, border(low_column, origin, cell_size)))
    if high_column < last:
        gap = min(gap, sub(border(high_column + 1, origin, cell_size), qx))
    if low_row > 0:
        gap = min(gap, sub(qy, border(low_row, origin, cell_size)))
    if high_row < last:
        gap = min(gap, sub(border(high_row + 1, origin, cell_size), qy))
    return gap


@cuda.jit(device=True)
def search_is_complete(keys, max_d2, gap, slack):
    """Whether no agent at ``gap`` (from :func:`unsearched_gap`) or beyond can join the list: the
    cutoff ``max_d2`` or the list's K-th key lies below the gap, less ``slack``, squared."""
    gap = gap - slack
    if gap <= ZERO:
        return False
    bound = gap * gap * BOUND_SHRINK
    # Strictly below: an unsearched agent at exactly the k-th distance could have a lower id.
    return max_d2 <= bound or kth_closer_than(keys, bound)


@cuda.jit(device=True)
def query_cell(qx, qy, side, length, origin=ZERO):
    """The cell of the point (qx, qy), packed for :func:`group_tile` as row << COLUMN_BITS | column (int32)."""
    inverse_cell_size = np.float32(side) / length
    return ((cell_coordinate(qy, origin, inverse_cell_size, side) << COLUMN_BITS)
            | cell_coordinate(qx, origin, inverse_cell_size, side))


@cuda.jit(device=True)
def group_tile(cells, side):
    """The tile the calling thread's group searches: the smallest rectangle of cells holding its
    threads' query cells, widened by ``TILE_MARGIN`` cells on each side, then to whole strips, and
    clipped to the grid.

    cells int32[blockDim.x]: each thread's :func:`query_cell`, ``NO_CELL`` for a thread without
    a query. A group is ``GROUP_SIZE`` consecutive threads; every thread of it reads the same
    words in the same order. Returns ``(low_column, high_column, low_row, high_row)``.
    """
    thread = cuda.threadIdx.x
    first = thread - (thread & (GROUP_SIZE - 1))
    low_column = side
    high_column = -1
    low_row = side
    high_row = -1
    for member in range(first, min(first + GROUP_SIZE, cuda.blockDim.x)):
        packed = cells[member]
        if packed != NO_CELL:
            column = packed & COLUMN_MASK
            row = packed >> COLUMN_BITS
            low_column = min(low_column, column)
            high_column = max(high_column, column)
            low_row = min(low_row, row)
            high_row = max(high_row, row)
    return widened((low_column, high_column, low_row, high_row), side)


@cuda.jit(device=True)
def widened(tile, side):
    """The tile (low_column, high_column, low_row, high_row) widened by ``TILE_MARGIN`` cells on each
    side, then to whole strips, and clipped to the grid."""
    low_column, high_column, low_row, high_row = tile
    last = side - 1
    return (max(low_column - TILE_MARGIN, 0) & ~LAST_IN_STRIP, min((high_column + TILE_MARGIN) | LAST_IN_STRIP, last),
            max(low_row - TILE_MARGIN, 0), min(high_row + TILE_MARGIN, last))
