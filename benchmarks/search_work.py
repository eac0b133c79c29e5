"""How many loop trips a warp makes in each grid search of tag_continuous, counted in NumPy.

    python benchmarks/search_work.py [--agents 1000] [--observed 10] [--environments 20]

A count, not a timing: it places N agents uniformly at random, bins them as
warpsim.kernels.neighbours does (the strip-by-strip snake order of the cells, ``side``
from GridLayout's agents per cell), splits the binned queries into warps of 32 and counts,
per warp, the trips of the candidate loop, where every lane of a warp stays until the last
one is done:

* the ring search (``neighbour_search="grid"``): each lane searches rings of cells around
  its own until its exact bound is met; at every cell of the walk the warp runs as many
  trips as the fullest of its lanes' cells, and rings as long as its slowest lane;
* the tile search (``"grid_tiles"``): every lane reads the candidates of the warp's tile,
  the same trips for all; where a lane's bound fails, the lanes that failed read the tile
  widened by the margin, and so on.

It prints, per warp, the trips of each and the runs of contiguous cells it walks (each
run costs the loop's set-up), over ``--environments`` random layouts, for a few tile
margins, and the share of queries the warp's first tile decides. The constants of
warpsim.kernels.neighbours (TILE_MARGIN, STRIP_WIDTH) were chosen from it.
"""

from __future__ import annotations

import argparse

import numpy as np

from warpsim.commands import positive_int
from warpsim.kernels.grid_layout import agents_per_cell
from warpsim.kernels.neighbours import STRIP_WIDTH

WARP = 32


def snake_index(column: np.ndarray, row: np.ndarray, side: int) -> np.ndarray:
    """warpsim.kernels.neighbours.cell_index, vectorised."""
    strip = column // STRIP_WIDTH
    first_column = strip * STRIP_WIDTH
    width = np.minimum(STRIP_WIDTH, side - first_column)
    position = np.where(strip % 2 == 0, row, side - 1 - row)
    return strip * STRIP_WIDTH * side + position * width + column - first_column


def kth_distances(x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    """The K-th smallest distance from each agent to the others."""
    d2 = (x[:, None] - x[None]) ** 2 + (y[:, None] - y[None]) ** 2
    np.fill_diagonal(d2, np.inf)
    return np.sqrt(np.partition(d2, k - 1, axis=1)[:, k - 1])


def gap(x, y, low_column, high_column, low_row, high_row, side, cell):
    """Distance to the nearest side of the rectangle of cells that has cells behind it (inf: none)."""
    sides = [np.where(low_column > 0, x - low_column * cell, np.inf),
             np.where(high_column < side - 1, (high_column + 1) * cell - x, np.inf),
             np.where(low_row > 0, y - low_row * cell, np.inf),
             np.where(high_row < side - 1, (high_row + 1) * cell - y, np.inf)]
    return np.min(sides, axis=0)


def one_layout(rng, n: int, k: int, margins: tuple[int, ...]) -> dict:
    length = 1.0
    side = max(1, int(np.sqrt(n // agents_per_cell(k))))
    cell = length / side
    x, y = rng.uniform(0, length, (2, n))
    column = np.minimum((x / cell).astype(int), side - 1)
    row = np.minimum((y / cell).astype(int), side - 1)
    order = np.argsort(snake_index(column, row, side), kind="stable")
    x, y, column, row = x[order], y[order], column[order], row[order]
    counts = np.zeros((side, side), int)
    np.add.at(counts, (row, column), 1)
    summed = np.pad(counts.cumsum(0).cumsum(1), ((1, 0), (1, 0)))

    def agents_in(low_column, high_column, low_row, high_row):
        return (summed[high_row + 1, high_column + 1] - summed[low_row, high_column + 1]
                - summed[high_row + 1, low_column] + summed[low_row, low_column])

    kth = kth_distances(x, y, k)
    found = {"ring": 0, "ring cells": 0}
    for margin in margins:
        found[f"tile, margin {margin}"] = 0
        found[f"tile runs, margin {margin}"] = 0
        found[f"decided, margin {margin}"] = 0
    warps = range(0, n, WARP)
    for first in warps:
        lanes = slice(first, min(first + WARP, n))
        qx, qy, qc, qr, need = x[lanes], y[lanes], column[lanes], row[lanes], kth[lanes]
        # Ring search: a lane stops after ring r once the square of rings 0..r leaves a gap above its K-th distance.
        stop = np.full(len(qx), side)
        for r in range(side):
            done = gap(qx, qy, qc - r, qc + r, qr - r, qr + r, side, cell) > need
            stop = np.where((stop == side) & done, r, stop)
        for r in range(int(stop.max()) + 1):
            cells = [(dc, -r) for dc in range(-r, r + 1)] + [(dc, r) for dc in range(-r, r + 1)] * (r > 0) \
                + [(dc, dr) for dr in range(-r + 1, r) for dc in (-r, r)]
            found["ring cells"] += len(cells)
            for dc, dr in cells:
                c, w = qc + dc, qr + dr
                inside = (c >= 0) & (c < side) & (w >= 0) & (w < side) & (stop >= r)
                found["ring"] += int(np.max(np.where(inside, counts[np.clip(w, 0, side - 1), np.clip(c, 0, side - 1)],
                                                     0)))
        for margin in margins:
            tile = [qc.min(), qc.max(), qr.min(), qr.max()]
            waiting = np.ones(len(qx), bool)
            first_tile = True
            while waiting.any():
                tile = [max(tile[0] - margin, 0) // STRIP_WIDTH * STRIP_WIDTH,
                        min((tile[1] + margin) // STRIP_WIDTH * STRIP_WIDTH + STRIP_WIDTH - 1, side - 1),
                        max(tile[2] - margin, 0), min(tile[3] + margin, side - 1)]
                found[f"tile, margin {margin}"] += int(agents_in(*tile))
                found[f"tile runs, margin {margin}"] += tile[1] // STRIP_WIDTH - tile[0] // STRIP_WIDTH + 1
                waiting &= ~(gap(qx, qy, *tile, side, cell) > need)
                if first_tile:
                    found[f"decided, margin {margin}"] += int((~waiting).sum())
                    first_tile = False
    return {"warps": len(warps), **found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=positive_int, default=1000, help="N")
    parser.add_argument("--observed", type=positive_int, default=10, help="K")
    parser.add_argument("--environments", type=positive_int, default=20, help="random layouts")
    args = parser.parse_args(argv)
    margins = (1, 2, 3)
    rng = np.random.default_rng(0)
    totals: dict[str, int] = {}
    for _ in range(args.environments):
        for name, value in one_layout(rng, args.agents, args.observed, margins).items():
            totals[name] = totals.get(name, 0) + value
    warps = totals.pop("warps")
    queries = args.agents * args.environments
    print(f"N = {args.agents}, K = {args.observed}, {agents_per_cell(args.observed)} agents a cell, "
          f"strips of {STRIP_WIDTH}, {args.environments} layouts; per warp, the trips of the candidate loop "
          f"and the runs of cells it walks:")
    print(f"  ring search:            {totals['ring'] / warps:6.1f} trips, {totals['ring cells'] / warps:5.1f} runs")
    for margin in margins:
        print(f"  tile search, margin {margin}: {totals[f'tile, margin {margin}'] / warps:6.1f} trips, "
              f"{totals[f'tile runs, margin {margin}'] / warps:5.1f} runs "
              f"(the first tile decides {totals[f'decided, margin {margin}'] / queries:.1%} of the queries)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
