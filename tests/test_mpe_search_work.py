"""benchmarks/mpe_search_work.py: the count of the distances the MPE grid searches compute."""

from pathlib import Path

import numpy as np
import pytest
from helpers import load_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "mpe_search_work.py"


@pytest.fixture(scope="module")
def work():
    return load_script(SCRIPT)


def uniform(n: int, seed: int) -> dict[str, np.ndarray]:
    x, y, landmark_x, landmark_y = np.random.default_rng(seed).uniform(-1, 1, (4, n))
    return dict(pos_x=x, pos_y=y, landmark_x=landmark_x, landmark_y=landmark_y)


def test_a_grid_of_one_cell_reads_every_body(work):
    """Five agents, two a cell: a grid of one cell, where every search reads all the bodies."""
    reads = work.spread_reads(uniform(5, 0), 4, np.arange(5))
    assert {search: grid for search, (grid, _pairs) in reads.items()} == {
        "nearest agents": 5, "nearest landmarks": 5, "each landmark's nearest agent": 5, "agents touching": 5}


def test_at_hundreds_of_agents_in_the_box_the_grids_read_a_few_cells(work):
    for reads in (work.spread_reads(uniform(400, 1), 10, np.arange(400)),
                  work.tag_reads(uniform(400, 2), 10, np.arange(400))):
        grid = sum(grid for grid, _pairs in reads.values())
        pairs = sum(pairs for _grid, pairs in reads.values())
        assert 10 < grid < pairs / 20, reads


def test_bodies_beyond_the_box_crowd_its_edge_cells(work):
    """The same agents, all but one pushed 30 units out: binned at the edges, they are read far more often."""
    inside = uniform(400, 3)
    outside = dict(inside, pos_x=np.where(np.arange(400) > 0, inside["pos_x"] * 30, inside["pos_x"]))
    queries = np.arange(0, 400, 20)
    near, far = (work.spread_reads(bodies, 10, queries)["nearest agents"][0] for bodies in (inside, outside))
    assert far > 3 * near


def test_the_episodes_are_warpsims_own_and_leave_the_start(work):
    start, *after = work.episode("simple_spread", 30, 4, 0, 3)
    assert set(start) == {"pos_x", "pos_y", "landmark_x", "landmark_y"} and len(after) == 3
    assert work.in_the_box(start) == 1 and not np.array_equal(start["pos_x"], after[-1]["pos_x"])
    assert work.in_the_box(dict(start, pos_y=start["pos_y"] + np.arange(30) % 2 * 5)) == 0.5
    tag_start = next(work.episode("simple_tag", 8, 3, 0, 0))
    assert set(tag_start) == {"pos_x", "pos_y"} and len(tag_start["pos_x"]) == 8


def test_the_count_prints_each_search_at_the_start_and_over_the_episode(work, capsys):
    assert work.main(["--agents", "60", "--observed", "6", "--layouts", "1", "--steps", "2", "--queries", "10"]) == 0
    printed = capsys.readouterr().out
    assert "simple_spread at the start, the searches:" in printed
    assert "simple_spread over 3 steps, the searches:" in printed
    assert "simple_tag over 3 steps, adversaries touching:" in printed
    for wrong in (["--agents", "6", "--observed", "6"], ["--steps", "-1"], ["--queries", "0"]):
        with pytest.raises(SystemExit):
            work.main(wrong)
    assert "give N >= 2 and 1 <= K < N" in capsys.readouterr().err


def test_forces_are_computed_in_full_only_within_reach_of_a_touch(work):
    bodies = dict(pos_x=np.array([0, 0.38, 1.0]), pos_y=np.zeros(3))
    assert work.forces_in_full(bodies, work.contact_reach("simple_spread", 3)) == 2 / 3
    tag = work.contact_reach("simple_tag", 4)  # 3 adversaries of radius 0.075, then a good agent of 0.05
    assert np.allclose(tag[0, :], [0.15, 0.15, 0.15, 0.125]) and np.isclose(tag[3, 3], 0.1)
