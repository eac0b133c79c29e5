"""Host-side sizing of the neighbour grid of :mod:`warpsim.kernels.neighbours`.

A grid for up to ``num_agents`` agents per environment needs, per environment, the
sorted positions and ids of its agents and one int32 end per cell; the kernel keeps
``words_per_thread`` int32 words per thread of the block before it in shared memory (one
partial sum of the binning, and whatever else the kernel shares). Where all of that fits in a block's shared memory
(48 KiB, the most a launch may ask for without an opt-in) the grid is built there and
never leaves the chip; otherwise it goes to global scratch rows allocated once with the
environment (declared in ``EnvSpec.scratch``, counted in its memory check).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from warpsim.device import THREADS_PER_BLOCK
from warpsim.environment import StateArray

SHARED_MEMORY_BYTES = 48 * 1024
"""Dynamic shared memory a launch may use without raising the kernel's limit."""
AGENTS_PER_CELL_PER_NEIGHBOUR = 3
"""The grid aims at max(2, K / this) agents per cell: a query then usually finds its K
nearest in the 3 x 3 cells around it and stops after the first ring."""
MIN_AGENTS_PER_CELL = 2


def agents_per_cell(num_nearest: int) -> int:
    """Target occupancy of a cell for searches of ``num_nearest`` (K) neighbours."""
    return max(MIN_AGENTS_PER_CELL, num_nearest // AGENTS_PER_CELL_PER_NEIGHBOUR)


@dataclass(frozen=True)
class GridLayout:
    """Where the grid of one environment lives and how much memory it takes."""

    num_agents: int
    """Most agents binned in one environment (N, or the taggers of a tagger grid)."""
    agents_per_cell: int
    """Target occupancy of a cell; the grid has at most num_agents // this cells."""
    threads_per_block: int = THREADS_PER_BLOCK
    """Most threads per block of the launches that use it (the partial sums of the scan)."""
    words_per_thread: int = 1
    """int32 words of shared memory per thread before the grid: the partial sum of the
    binning, plus the kernel's own (e.g. the K nearest of each thread's query)."""

    @property
    def cells_capacity(self) -> int:
        return max(1, self.num_agents // self.agents_per_cell)

    @property
    def grid_bytes(self) -> int:
        """Sorted x, y (float32), ids (int16) and cell ends (int32) of one environment."""
        return 10 * self.num_agents + 4 * self.cells_capacity

    @property
    def per_thread_bytes(self) -> int:
        return 4 * self.words_per_thread * self.threads_per_block

    @property
    def in_shared(self) -> bool:
        return self.per_thread_bytes + self.grid_bytes <= SHARED_MEMORY_BYTES

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory of a launch: the words per thread, and the grid when it fits."""
        return self.per_thread_bytes + (self.grid_bytes if self.in_shared else 0)

    def shared_bytes_with(self, extra_bytes: int) -> int:
        """Dynamic shared memory of a launch that keeps ``extra_bytes`` after a grid in shared memory
        (from the first whole int32 word after it, as ``neighbours.words_after_grid`` places them)."""
        return 4 * -(-self.shared_bytes // 4) + extra_bytes

    def fits_in_shared_with(self, extra_bytes: int) -> bool:
        """Whether the grid is in shared memory and ``extra_bytes`` fit after it."""
        return self.in_shared and self.shared_bytes_with(extra_bytes) <= SHARED_MEMORY_BYTES

    def kernel_constants(self, prefix: str) -> dict[str, Any]:
        """What the kernels read of the layout, for ``Environment.add_constants``:
        ``<prefix>_agents_per_cell`` and ``_cells_capacity`` (int32). Whether the grid is in shared
        memory (``in_shared``) is a choice of the kernel's compilation, not an argument."""
        return {f"{prefix}_agents_per_cell": np.int32(self.agents_per_cell),
                f"{prefix}_cells_capacity": np.int32(self.cells_capacity)}

    def scratch(self, prefix: str, in_shared: bool | None = None) -> tuple[StateArray, ...]:
        """The global scratch of the grid, for ``EnvSpec.scratch``: ``<prefix>_x``, ``_y``, ``_ids``
        and ``_cells``, one row per environment; 1 x 1 placeholders when the grid is in shared memory
        (``in_shared``: where the kernel keeps it, when not ``self.in_shared``, e.g. beside another grid)."""
        if self.in_shared if in_shared is None else in_shared:
            agents: tuple[str | int, ...] = (1, 1)
            cells: tuple[str | int, ...] = (1, 1)
        else:
            agents = ("E", self.num_agents)
            cells = ("E", self.cells_capacity)
        return (StateArray(f"{prefix}_x", np.float32, agents, "x of the binned agents, cell by cell"),
                StateArray(f"{prefix}_y", np.float32, agents, "y of the binned agents, cell by cell"),
                StateArray(f"{prefix}_ids", np.int32, agents, "ids of the binned agents, cell by cell"),
                StateArray(f"{prefix}_cells", np.int32, cells, "end of each cell in the sorted arrays"))
