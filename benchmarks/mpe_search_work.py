"""How many distances a step of simple_spread and simple_tag computes per agent, on grids and by every pair,
counted in NumPy.

    python benchmarks/mpe_search_work.py [--agents 1000] [--observed 10] [--layouts 5] [--steps 24]

A count, not a timing: it plays episodes of warpsim's own scenario (the NumPy reference, uniformly
random actions) and, at the start and after each of ``--steps`` steps, bins the bodies as the
scenarios' grid kernels do (``GridLayout``'s bodies per cell, the box of warpsim.kernels.mpe) and
counts the bodies in the cells each search reads for ``--queries`` of the agents: the rings of
``k_nearest`` until its bound is met (without the rounding slack) and the square of ``count_within``.
Beside each it puts what comparing every pair reads (the kernels before the grids). The contact
forces compare every pair either way, but compute the force in full only for the agents within
reach of a touch (``OUT_OF_CONTACT``), a count it prints too. It prints the counts at the start
(uniform bodies in the box) and over the episode: at N = 1000 simple_spread's contact forces drive
most agents out of the box within a few steps, where the grids bin them in their edge cells.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import numpy as np
import torch

from warpsim.commands import positive_int
from warpsim.envs.simple_spread.params import CONTACT_DISTANCE
from warpsim.envs.simple_tag.params import ADVERSARY_SIZE, GOOD_SIZE
from warpsim.kernels.grid_layout import GridLayout, agents_per_cell
from warpsim.kernels.mpe import BOX_LENGTH, BOX_ORIGIN, OUT_OF_CONTACT
from warpsim.registry import make

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


def adversaries_of(n: int) -> int:
    """simple_tag's adversaries among N agents: 3 to 1 good agent, as MPE2's defaults."""
    return max(1, 3 * n // 4)


def episode(scenario: str, n: int, k: int, seed: int, steps: int) -> Iterator[dict[str, np.ndarray]]:
    """One environment of warpsim's ``scenario`` on the NumPy reference: its bodies' positions (float64[n]
    by name) at the start and after each of ``steps`` steps of uniformly random moves."""
    params = (dict(N=n, num_agent_neighbors=k, num_landmark_neighbors=k) if scenario == "simple_spread" else
              dict(num_adversaries=adversaries_of(n), num_good=n - adversaries_of(n), num_agent_neighbors=k))
    env = make(scenario, 1, backend="numpy", seed=seed, **params)
    env.reset()
    generator = torch.Generator().manual_seed(seed)
    names = [name for name in ("pos_x", "pos_y", "landmark_x", "landmark_y") if hasattr(env.state, name)]
    for step in range(steps + 1):
        yield {name: np.asarray(getattr(env.state, name))[0].astype(np.float64) for name in names}
        if step < steps:
            env.actions.copy_(torch.randint(0, env.spec.action_levels[0], env.actions.shape,
                                            dtype=env.actions.dtype, generator=generator))
            env.step()


def in_the_box(bodies: dict[str, np.ndarray]) -> float:
    """The share of the agents inside the grids' box."""
    inside = [(value >= BOX_ORIGIN) & (value <= BOX_ORIGIN + BOX_LENGTH)
              for value in (bodies["pos_x"], bodies["pos_y"])]
    return float(np.mean(inside[0] & inside[1]))


def forces_in_full(bodies: dict[str, np.ndarray], reach: np.ndarray) -> float:
    """Per agent, the other agents whose contact force the kernels compute in full: those nearer than their
    pair's contact distance ``reach`` (float32[n, n]) plus OUT_OF_CONTACT."""
    x, y = bodies["pos_x"], bodies["pos_y"]
    d2 = (x[:, None] - x[None]) ** 2 + (y[:, None] - y[None]) ** 2
    near = d2 <= (reach + OUT_OF_CONTACT) ** 2
    np.fill_diagonal(near, False)
    return float(near.sum(axis=1).mean())


def contact_reach(scenario: str, n: int) -> np.ndarray:
    """Each pair's contact distance: simple_spread's 0.3, or the sum of simple_tag's two radii."""
    if scenario == "simple_spread":
        return np.full((n, n), CONTACT_DISTANCE)
    size = np.where(np.arange(n) < adversaries_of(n), ADVERSARY_SIZE, GOOD_SIZE)
    return size[:, None] + size[None]


def spread_reads(bodies: dict[str, np.ndarray], k: int, queries: np.ndarray) -> dict[str, tuple[float, float]]:
    """Per agent, simple_spread's reads on grids and by every pair, (grid, pairs) by search, averaged
    over the agents and landmarks of index ``queries``."""
    x, y, landmark_x, landmark_y = (bodies[name] for name in ("pos_x", "pos_y", "landmark_x", "landmark_y"))
    n = len(x)
    agents = Grid(x, y, agents_per_cell(k))
    landmarks = Grid(landmark_x, landmark_y, agents_per_cell(k))
    return {
        "nearest agents": (average([agents.ring_reads(x[i], y[i], k, i) for i in queries]), k * (n - 1)),
        "nearest landmarks": (average([landmarks.ring_reads(x[i], y[i], k) for i in queries]), k * n),
        "each landmark's nearest agent": (
            average([agents.ring_reads(landmark_x[j], landmark_y[j], 1) for j in queries]), n),
        "agents touching": (average([agents.square_reads(x[i], y[i], SPREAD_CONTACT) for i in queries]), n - 1),
    }


def tag_reads(bodies: dict[str, np.ndarray], k: int, queries: np.ndarray) -> dict[str, tuple[float, float]]:
    """Per agent, simple_tag's reads (the first agents adversaries, as ``adversaries_of``): (grid, pairs),
    averaged over the agents of index ``queries``."""
    x, y = bodies["pos_x"], bodies["pos_y"]
    n = len(x)
    adversaries = adversaries_of(n)
    agents = Grid(x, y, agents_per_cell(k))
    hunters = Grid(x[:adversaries], y[:adversaries], agents_per_cell(1))
    good = [i for i in queries if i >= adversaries] or list(range(adversaries, n))
    touches = average([hunters.square_reads(x[i], y[i], TAG_REACH) for i in good]) * (n - adversaries) / n
    return {
        "nearest agents": (average([agents.ring_reads(x[i], y[i], k, i) for i in queries]), k * (n - 1)),
        "adversaries touching": (touches, adversaries * (n - adversaries) / n),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=positive_int, default=1000, help="N")
    parser.add_argument("--observed", type=positive_int, default=10, help="K, of the agents and of the landmarks")
    parser.add_argument("--layouts", type=positive_int, default=5, help="episodes, one seed each")
    parser.add_argument("--steps", type=int, default=24, help="steps of each episode after its start (MPE2's "
                        "episode: 24 after the start)")
    parser.add_argument("--queries", type=positive_int, default=100,
                        help="agents whose searches are counted, evenly spaced")
    args = parser.parse_args(argv)
    if args.agents < 2 or not 1 <= args.observed < args.agents:
        parser.error(f"--agents {args.agents} --observed {args.observed}: give N >= 2 and 1 <= K < N")
    if args.steps < 0:
        parser.error(f"--steps {args.steps} is not allowed; give an integer >= 0 (0: the start alone)")
    queries = np.unique(np.linspace(0, args.agents - 1, min(args.queries, args.agents)).astype(int))
    print(f"N = {args.agents}, the {args.observed} nearest observed, {args.layouts} episode(s) of random moves, "
          f"{len(queries)} agents' searches; distances per agent a step, on grids / by every pair (contact forces: "
          f"{args.agents - 1} either way):")
    for scenario, reads in (("simple_spread", spread_reads), ("simple_tag", tag_reads)):
        episodes = [list(episode(scenario, args.agents, args.observed, seed, args.steps))
                    for seed in range(args.layouts)]
        inside = np.mean([[in_the_box(bodies) for bodies in run] for run in episodes], axis=0)
        print(f"  {scenario}: agents in the box after each step: "
              + " ".join(f"{share:.0%}" for share in inside[1:]))
        counts = [[reads(bodies, args.observed, queries) for bodies in run] for run in episodes]
        reach = contact_reach(scenario, args.agents)
        in_full = np.mean([[forces_in_full(bodies, reach) for bodies in run] for run in episodes], axis=0)
        print(f"  {scenario}: contact forces computed in full, of {args.agents - 1}, at the start "
              f"{in_full[0]:.0f}, over {args.steps + 1} steps {in_full.mean():.0f}")
        for when, states in (("at the start", [run[:1] for run in counts]), (f"over {args.steps + 1} steps", counts)):
            grid_total = pairs_total = 0.0
            for search in counts[0][0]:
                grid, pairs = (float(np.mean([state[search][column] for run in states for state in run]))
                               for column in (0, 1))
                grid_total, pairs_total = grid_total + grid, pairs_total + pairs
                print(f"  {scenario} {when}, {search}: {grid:.0f} / {pairs:.0f}")
            print(f"  {scenario} {when}, the searches: {grid_total:.0f} / {pairs_total:.0f} "
                  f"({pairs_total / grid_total:.0f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
