"""benchmarks/runners_kept.py: the tag-evade bar from two evaluation files."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "runners_kept.py"


def evaluation(tags_sampled: float, tags_greedy: float, exits: bool = True) -> dict:
    return {"config": {"env_params": {"num_runners": 100, "runner_exits_game_after_tagged": exits}},
            "device": "cpu", "warpsim_commit": None,
            "plays": {"sampled": {"counters_per_episode": {"tags": tags_sampled}},
                      "greedy": {"counters_per_episode": {"tags": tags_greedy}}}}


def run(tmp_path, trained: dict, baseline: dict):
    paths = [tmp_path / "trained.json", tmp_path / "random.json"]
    for path, record in zip(paths, (trained, baseline)):
        path.write_text(json.dumps(record))
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, paths), "--out", str(tmp_path / "kept.json")],
                          capture_output=True, text=True)


def test_runners_kept_are_the_runners_less_the_tags_and_the_bar_is_judged_per_play(tmp_path):
    result = run(tmp_path, evaluation(96.0, 98.5), evaluation(98.0, 99.0))
    assert result.returncode == 0, result.stderr
    figures = json.loads((tmp_path / "kept.json").read_text())["plays"]
    assert figures["sampled"] == {"trained_runners_kept": 4.0, "random_runners_kept": 2.0, "ratio": 2.0,
                                  "bar_met": True}
    assert figures["greedy"]["ratio"] == 1.5 and figures["greedy"]["bar_met"]
    assert "2.00x (bar 1.5x: met)" in result.stdout


def test_runs_whose_runners_stay_in_the_game_are_refused(tmp_path):
    result = run(tmp_path, evaluation(96.0, 98.5, exits=False), evaluation(98.0, 99.0))
    assert result.returncode != 0 and "stay in the game" in result.stderr
