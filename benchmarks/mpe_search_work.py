"""How many distances a step of simple_spread and simple_tag computes per agent, on grids and by every pair,
counted in NumPy.

    python benchmarks/mpe_search_work.py [--agents 1000] [--observed 10] [--layouts 5]

A count, not a timing: it places the bodies uniformly in MPE's box [-1, 1]^2, as a reset does, bins
them as the scenarios' grid kernels do (``GridLayout``'s bodies per cell, the box of
warpsim.kernels.mpe) and counts the bodies in the cells each search reads: the rings of
``k_nearest`` until its bound is met (without the rounding slack) and the square of ``count_within``.
Beside each it puts what comparing every pair reads (the kernels before the grids). The contact
forces compare every pair either way.
"""

from __future__ import annotations

import argparse

import numpy as np

from warpsim.kernels.grid_layout import GridLayout, agents_per_cell
from warpsim.kernels.mpe import BOX_LENGTH, BOX_ORIGIN

SPREAD_CONTACT = 0.3
"""simple_spread's agents touch closer than this."""
TAG_REACH = 0.125
"""simple_tag's adversary touches a good agent closer than this."""


class Grid:
    """Bodies binned in a grid over the box, with the counts of its cells."""

    def __init__(self, x: np.ndarray, y: np.ndarray, per_cell: int):
        self.x, self.y = x, y
        cells = GridLayout(len(x), per_cell).cells_capacity
        self.side = max(1, int(np.sqrt(cells)))
        self.cell = float(BOX_LENGTH) / self.side
        counts = np.zeros((self.side, self.side), int)
        np.add.at(counts, (self.coordinate(y), self.coordinate(x)), 1)
        self.summed = np.pad(counts.cumsum(0).cumsum(1), ((1, 0), (1, 0)))

    def coordinate(self, value):
        return np.clip(np.floor((value - BOX_ORIGIN) / self.cell), 0, self.side - 1).astype(int)

    def bodies_in(self, low_column, high_column, low_row, high_row) -> int:
        s = self.summed
        return int(s[high_row + 1, high_column + 1] - s[low_row, high_column + 1] - s[high_row + 1, low_column]
                   + s[low_row, low_column])

    def ring_reads(self, qx: float, qy: float, k: int, skip: int = -1) -> int:
        """The bodies in the cells k_nearest reads for the K nearest of (qx, qy), other than ``skip``."""
        d2 = (self.x - qx) ** 2 + (self.y - qy) ** 2
        if skip >= 0:
            d2[skip] = np.inf
        kth = np.sqrt(np.partition(d2, k - 1)[k - 1])
        cx, cy = int(self.coordinate(qx)), int(self.coordinate(qy))
        last = self.side - 1
        for r in range(self.side):
            square = (max(cx - r, 0), min(cx + r, last), max(cy - r, 0), min(cy + r, last))
            gaps = [qx - (BOX_ORIGIN + square[0] * self.cell) if square[0] > 0 else np.inf,
                    BOX_ORIGIN + (square[1] + 1) * self.cell - qx if square[1] < last else np.inf,
                    qy - (BOX_ORIGIN + square[2] * self.cell) if square[2] > 0 else np.inf,
                    BOX_ORIGIN + (square[3] + 1) * self.cell - qy if square[3] < last else np.inf]
            if kth < min(gaps):
                break
        return self.bodies_in(*square)

    def square_reads(self, qx: float, qy: float, reach: float) -> int:
        """The bodies in the cells count_within reads around (qx, qy)."""
        return self.bodies_in(int(self.coordinate(qx - reach)), int(self.coordinate(qx + reach)),
                              int(self.coordinate(qy - reach)), int(self.coordinate(qy + reach)))


def average(reads: list[int]) -> float:
    return float(np.mean(reads))


def spread_reads(rng, n: int, k: int) -> dict[str, tuple[float, float]]:
    """Per agent, simple_spread's reads on grids and by every pair: (grid, pairs) by search."""
    x, y, landmark_x, landmark_y = rng.uniform(-1, 1, (4, n))
    agents = Grid(x, y, agents_per_cell(k))
    landmarks = Grid(landmark_x, landmark_y, agents_per_cell(k))
    return {
        "nearest agents": (average([agents.ring_reads(x[i], y[i], k, i) for i in range(n)]), k * (n - 1)),
        "nearest landmarks": (average([landmarks.ring_reads(x[i], y[i], k) for i in range(n)]), k * n),
        "each landmark's nearest agent": (
            average([agents.ring_reads(landmark_x[j], landmark_y[j], 1) for j in range(n)]), n),
        "agents touching": (average([agents.square_reads(x[i], y[i], SPREAD_CONTACT) for i in range(n)]), n - 1),
    }


def tag_reads(rng, n: int, k: int) -> dict[str, tuple[float, float]]:
    """Per agent, simple_tag's reads (3 adversaries to 1 good agent, as MPE2's defaults): (grid, pairs)."""
    adversaries = max(1, 3 * n // 4)
    x, y = rng.uniform(-1, 1, (2, n))
    agents = Grid(x, y, agents_per_cell(k))
    hunters = Grid(x[:adversaries], y[:adversaries], agents_per_cell(1))
    touches = [hunters.square_reads(x[i], y[i], TAG_REACH) for i in range(adversaries, n)]
    return {
        "nearest agents": (average([agents.ring_reads(x[i], y[i], k, i) for i in range(n)]), k * (n - 1)),
        "adversaries touching": (sum(touches) / n, adversaries * (n - adversaries) / n),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000, help="N")
    parser.add_argument("--observed", type=int, default=10, help="K, of the agents and of the landmarks")
    parser.add_argument("--layouts", type=int, default=5, help="random starts")
    args = parser.parse_args(argv)
    if args.agents < 2 or not 1 <= args.observed < args.agents:
        parser.error(f"--agents {args.agents} --observed {args.observed}: give N >= 2 and 1 <= K < N")
    rng = np.random.default_rng(0)
    print(f"N = {args.agents}, the {args.observed} nearest observed, {args.layouts} uniform starts; distances per "
          f"agent a step, on grids / by every pair (contact forces: {args.agents - 1} either way):")
    for scenario, reads in (("simple_spread", spread_reads), ("simple_tag", tag_reads)):
        runs = [reads(rng, args.agents, args.observed) for _ in range(args.layouts)]
        grid_total = pairs_total = 0.0
        for search in runs[0]:
            grid, pairs = (float(np.mean([run[search][column] for run in runs])) for column in (0, 1))
            grid_total, pairs_total = grid_total + grid, pairs_total + pairs
            print(f"  {scenario}, {search}: {grid:.0f} / {pairs:.0f}")
        print(f"  {scenario}, the searches: {grid_total:.0f} / {pairs_total:.0f} ({pairs_total / grid_total:.0f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
