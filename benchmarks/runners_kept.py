"""The tag-evade bar: runners still in the game at the end, trained runners against random ones.

    python benchmarks/runners_kept.py TRAINED.json RANDOM_RUNNERS.json [--out FILE.json]

TRAINED.json is ``warpsim evaluate RUN --json`` of a tag-evade run (runners trained, taggers
frozen from tag-chase); RANDOM_RUNNERS.json is ``warpsim evaluate RUN --random runner
--json`` of the same run on the same seeds: the same taggers against uniformly random
runners. In tag_continuous a tagged runner leaves the game, so the runners still in it at
the end of an episode are ``num_runners - tags per episode``. The bar: trained runners keep
at least 1.5x as many, with sampled and with greedy play (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from warpsim.commands import json_output
from warpsim.files import write_output

BAR = 1.5


def runners_kept(evaluation: dict, play: str) -> float:
    """Runners still in the game at the end of an episode, on average, in one play of an evaluation file."""
    rules = evaluation["config"]["env_params"]
    if rules.get("runner_exits_game_after_tagged") is False:
        raise SystemExit("runners stay in the game when tagged in this run: tags do not count runners out")
    return rules["num_runners"] - evaluation["plays"][play]["counters_per_episode"]["tags"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trained", type=Path)
    parser.add_argument("random_runners", type=Path)
    parser.add_argument("--out", type=json_output("runners kept"), help="also write the figures to this JSON file")
    args = parser.parse_args()
    trained, baseline = (json.loads(path.read_text()) for path in (args.trained, args.random_runners))
    figures = {}
    for play in trained["plays"]:
        if play not in baseline["plays"]:
            continue
        mine, theirs = runners_kept(trained, play), runners_kept(baseline, play)
        ratio = mine / theirs if theirs else float("inf")
        figures[play] = {"trained_runners_kept": mine, "random_runners_kept": theirs, "ratio": ratio,
                         "bar_met": ratio >= BAR}
        print(f"{play} play: trained runners keep {mine:.2f} in the game, random ones {theirs:.2f}: {ratio:.2f}x "
              f"(bar {BAR}x: {'met' if ratio >= BAR else 'missed'})")
    if args.out:
        write_output(args.out, (json.dumps({"trained": str(args.trained), "random_runners": str(args.random_runners),
                                            "device": trained["device"], "warpsim_commit": trained["warpsim_commit"],
                                            "plays": figures}, indent=1) + "\n").encode(), "runners kept")


if __name__ == "__main__":
    main()
