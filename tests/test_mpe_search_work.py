"""benchmarks/mpe_search_work.py: the count of the distances the MPE grid searches compute."""

from pathlib import Path

import numpy as np
import pytest
from helpers import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "mpe_search_work.py"


@pytest.fixture(scope="module")
def work():
    return load_script(SCRIPT)


def test_a_grid_of_one_cell_reads_every_body(work):
    """Five agents, two a cell: a grid of one cell, where every search reads all the bodies."""
    reads = work.spread_reads(np.random.default_rng(0), 5, 4)
    assert {search: grid for search, (grid, _pairs) in reads.items()} == {
        "nearest agents": 5, "nearest landmarks": 5, "each landmark's nearest agent": 5, "agents touching": 5}


def test_at_hundreds_of_agents_the_grids_read_a_few_cells(work):
    rng = np.random.default_rng(1)
    for reads in (work.spread_reads(rng, 400, 10), work.tag_reads(rng, 400, 10)):
        grid = sum(grid for grid, _pairs in reads.values())
        pairs = sum(pairs for _grid, pairs in reads.values())
        assert 10 < grid < pairs / 20, reads


def test_the_count_prints_each_search_and_refuses_more_nearest_than_others(work, capsys):
    assert work.main(["--agents", "60", "--observed", "6", "--layouts", "1"]) == 0
    printed = capsys.readouterr().out
    assert "simple_spread, the searches:" in printed and "simple_tag, adversaries touching:" in printed
    with pytest.raises(SystemExit):
        work.main(["--agents", "6", "--observed", "6"])
    assert "give N >= 2 and 1 <= K < N" in capsys.readouterr().err
