"""`warpsim evaluate`: sampled and greedy play against the same random play, the --json record, bad paths."""

import json
import re
import subprocess

import pytest

from warpsim import commands
from warpsim import source_commit as commit_module
from warpsim.analysis.evaluate import evaluate_run
from warpsim.analysis.play import article
from warpsim.cli import main
from warpsim.errors import InvalidValueError
from warpsim.source_commit import source_commit

PLAY_HEADER = re.compile(r"^(sampled|greedy|uniformly random) play \(.+\): (\d+) episodes, (\d+) steps of every "
                         r"environment$")
RETURN = re.compile(r"^  mean return of an? (\w+) \((?:policy|uniformly random)\): (\S+)$")
COUNTER = re.compile(r"^  (\w+) per episode: (\S+)$")
LENGTH = re.compile(r"^  episode length: (\S+) steps \((\S+)% ended by the rules\)$")
EVENTS = re.compile(r"^  steps to the first / last of the (\w+): (\S+) / (\S+)$")
RATIO = re.compile(r"^    (.+): (\S+)x$")
PERCENT = "percent"
EVALUATE = ["--episodes", "8", "--num-envs", "4", "--backend", "numpy"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tag_gridworld run trained for one iteration: taggers that learn, runners at random."""
    run = tmp_path_factory.mktemp("evaluate") / "run"
    assert main(["train", "--config", "grid-small", "--iterations", "1", "--num-envs", "4", "--rollout-steps", "8",
                 "--set", "grid_length=5", "--set", "episode_length=10", "--opponent", "runner=random",
                 "--run-dir", str(run), "--backend", "numpy", "--quiet"]) == 0
    return run


def printed_figures(text: str) -> list[tuple[tuple, str, str]]:
    """(where the JSON record holds the figure, the printed figure, how it was printed) for
    every figure of the printed evaluation; a line of no known form fails the test."""
    lines = text.splitlines()
    assert lines[0].startswith("tag_gridworld from ") and lines[-1].startswith("wrote ")
    figures: list[tuple[tuple[str, ...], str, str]] = []
    play: tuple[str, ...] = ()
    for line in lines[1:-1]:
        if header := PLAY_HEADER.match(line):
            play = ("random",) if header[1] == "uniformly random" else ("plays", header[1])
            figures += [((*play, "episodes"), header[2], "{}"), ((*play, "steps"), header[3], "{}")]
        elif found := RETURN.match(line):
            figures.append(((*play, "returns", found[1]), found[2], "{:.3f}"))
        elif found := COUNTER.match(line):
            figures.append(((*play, "counters_per_episode", found[1]), found[2], "{:.3f}"))
        elif found := LENGTH.match(line):
            figures += [((*play, "episode_length"), found[1], "{:.1f}"),
                        ((*play, "terminated_fraction"), found[2], PERCENT)]
        elif found := EVENTS.match(line):
            figures += [((*play, "steps_to_first_event", found[1]), found[2], "{:.1f}"),
                        ((*play, "steps_to_last_event", found[1]), found[3], "{:.1f}")]
        elif found := RATIO.match(line):
            figures.append(((*play, "ratios_to_random", found[1]), found[2], "{:.2f}"))
        else:
            assert line == "  ratios to random play:", f"a printed line of no known form: {line!r}"
    return figures


def looked_up(record: dict, path: tuple):
    for key in path:
        record = record[key]
    return record


def test_the_json_file_holds_exactly_the_printed_figures(run, tmp_path, capsys):
    out = tmp_path / "evaluation.json"
    assert main(["evaluate", str(run), *EVALUATE, "--seed", "3", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    record = json.loads(out.read_text())
    figures = printed_figures(text)
    assert {path[1] if path[0] == "plays" else path[0] for path, _, _ in figures} == {"sampled", "greedy", "random"}
    assert sum(path[-2] == "ratios_to_random" for path, _, _ in figures) == 2 * 4  # tags, length, first, last
    for path, printed, form in figures:
        value = looked_up(record, path)
        if value is None:  # JSON has no NaN or infinity
            assert printed in ("nan", "inf"), f"{path}: the file holds null, the text shows {printed}"
            continue
        shown = f"{100 * value:.0f}" if form == PERCENT else form.format(value)
        assert shown == printed, f"{path}: the file holds {value}, the text shows {printed}"
    for play in ("sampled", "greedy"):
        assert record["plays"][play]["means"]["episode_length"] == record["plays"][play]["episode_length"]
        assert record["plays"][play]["random_roles"] == ["runner"]
    assert record["random"]["random_roles"] == ["tagger", "runner"]
    assert record["config"] == json.loads((run / "config.json").read_text())
    assert record["settings"] == {"episodes": 8, "num_envs": 4, "seed": 3, "backend": "numpy",
                                  "random_roles": ["runner"], "env_params": {}}
    assert isinstance(record["device"], str) and record["device"]
    assert record["warpsim_commit"] == source_commit()
    assert not list(tmp_path.glob("*.partial"))


def test_sampled_and_greedy_play_differ_and_each_is_named(run):
    result = evaluate_run(run, 8, num_envs=4, backend="numpy", seed=2)
    assert list(result.plays) == ["sampled", "greedy"]
    sampled, greedy = result.plays["sampled"], result.plays["greedy"]
    assert sampled.baseline is greedy.baseline is result.random, "random play is evaluated once and shared"
    assert sampled.means != greedy.means, "a policy one iteration old samples other actions than its argmax"
    text = str(result)
    assert text.index("sampled play (") < text.index("greedy play (") < text.index("uniformly random play (")


@pytest.mark.parametrize("flags", [[], ["--compare-random"]], ids=["default", "--compare-random"])
def test_play_that_is_all_random_anyway_has_ratios_of_exactly_one(run, capsys, flags):
    assert main(["evaluate", str(run), *EVALUATE, "--random", "tagger", *flags]) == 0
    ratios = [line for line in capsys.readouterr().out.splitlines() if RATIO.match(line)]
    assert len(ratios) == 2 * 4 and all(line.endswith(": 1.00x") for line in ratios), ratios
    result = evaluate_run(run, 8, num_envs=4, backend="numpy", random_roles=("tagger",))
    assert result.random is not None
    for play in result.plays.values():
        assert play.means == result.random.means, "the same random actions from the same starts"
        assert set(play.ratios().values()) == {1.0}
    assert result.random.counters["tags"] > 0, "the runs compared hold events"


def test_one_play_alone_and_no_random_play(run, tmp_path, capsys):
    out = tmp_path / "greedy.json"
    assert main(["evaluate", str(run), *EVALUATE, "--greedy", "--no-compare-random", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "greedy play (" in text and "sampled play" not in text
    assert "uniformly random play" not in text and "ratios" not in text
    record = json.loads(out.read_text())
    assert list(record["plays"]) == ["greedy"] and record["random"] is None
    assert "ratios_to_random" not in record["plays"]["greedy"]
    assert main(["evaluate", str(run), *EVALUATE, "--sample"]) == 0
    text = capsys.readouterr().out
    assert "sampled play (" in text and "greedy play" not in text and "ratios to random play" in text
    with pytest.raises(SystemExit):
        main(["evaluate", str(run), "--sample", "--greedy"])
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize("plays", [(), ("argmax",), ("greedy", "greedy"), "greedy"],
                         ids=["none", "unknown", "twice", "a string"])
def test_evaluate_run_refuses_plays_it_does_not_know(run, plays):
    with pytest.raises(InvalidValueError, match=r"plays=.* is not allowed; give a tuple of one or more of 'sampled', "
                                                r"'greedy', each once"):
        evaluate_run(run, 8, num_envs=4, backend="numpy", plays=plays)


@pytest.mark.parametrize("num_envs", [0, -3, 2.5, True])
def test_evaluate_run_refuses_a_bad_number_of_environments_before_playing(run, num_envs):
    with pytest.raises(InvalidValueError, match=r"^num_envs=.* is not allowed"):
        evaluate_run(run, 8, num_envs=num_envs, backend="numpy")


@pytest.mark.parametrize("where", ["a directory", "under a file", "not json", "empty", "the checkpoint",
                                   "the metrics", "the config", "beside the checkpoint given"])
def test_a_json_path_that_cannot_be_written_is_refused_before_evaluating(run, tmp_path, capsys, monkeypatch, where):
    afile = tmp_path / "afile"
    afile.write_text("x")
    source = run / "checkpoint.pt" if where == "beside the checkpoint given" else run
    path, expected = {
        "a directory": (tmp_path, f"evaluation file {tmp_path} is a directory; give a file name ending in .json"),
        "under a file": (afile / "e.json", f"directory of the evaluation file {afile} is a file, not a directory"),
        "not json": (tmp_path / "e.txt", f"evaluation file {tmp_path / 'e.txt'} must end in .json"),
        "empty": ("", "argument --json: an empty path is not allowed; give a file name"),
        "the checkpoint": (run / "checkpoint.pt", f"evaluation file {run / 'checkpoint.pt'} must end in .json"),
        "the metrics": (run / "metrics.jsonl", "must end in .json"),
        "the config": (run / "config.json", f"evaluation file {run / 'config.json'} is the config of the run in "
                                            f"{run.resolve()}, which warpsim never replaces; write to another file, "
                                            f"e.g. {run / 'config-evaluation.json'}"),
        "beside the checkpoint given": (run / "config.json", "is the config of the run in"),
    }[where]
    evaluated = []
    monkeypatch.setattr(commands, "evaluate_run", lambda *args, **kwargs: evaluated.append(args))
    before = {path: path.read_bytes() for path in [*tmp_path.rglob("*"), *run.rglob("*")] if path.is_file()}
    try:
        assert main(["evaluate", str(source), *EVALUATE, "--json", str(path)]) == 2
    except SystemExit as usage_error:
        assert where == "empty" and usage_error.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert expected in lines[-1] and len(lines) == (1 if where != "empty" else len(lines)), lines
    assert not evaluated and not captured.out
    assert {path: path.read_bytes() for path in [*tmp_path.rglob("*"), *run.rglob("*")] if path.is_file()} == before


def test_the_evaluation_file_goes_into_a_new_directory_whole(run, tmp_path, capsys):
    out = tmp_path / "new" / "evaluation.json"
    assert main(["evaluate", str(run), *EVALUATE, "--greedy", "--no-compare-random", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["plays"].keys() == {"greedy"}
    assert sorted(path.name for path in out.parent.iterdir()) == ["evaluation.json"], "no partial file is left"


def test_the_commit_is_none_without_git_or_outside_a_checkout(tmp_path, monkeypatch):
    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    with monkeypatch.context() as patched:
        patched.setattr(subprocess, "run", no_git)
        assert source_commit() is None
    monkeypatch.setattr(commit_module, "SOURCE_ROOT", tmp_path)
    assert source_commit() is None  # not a git checkout
    git = ["git", "-C", str(tmp_path), "-c", "user.name=warpsim", "-c", "user.email=warpsim@example.com"]
    try:
        subprocess.run([*git, "init", "-q"], check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git cannot make a repository here")
    (tmp_path / "module.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "module.py"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    assert source_commit() == {"commit": head, "clean": True}
    (tmp_path / "module.py").write_text("x = 2\n")
    assert source_commit() == {"commit": head, "clean": False}
    (tmp_path / "package").mkdir()
    monkeypatch.setattr(commit_module, "SOURCE_ROOT", tmp_path / "package")
    assert source_commit() is None, "a package installed inside another repository is not that repository's"


def test_the_header_says_how_the_episodes_are_counted_and_roles_take_their_article(run, capsys):
    assert main(["evaluate", str(run), "--episodes", "5", "--num-envs", "4", "--backend", "numpy"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("at least 5 episodes of each play, as many in each of 4 environments, seed 1, "
                             "numpy backend")
    assert all(int(header[2]) == 8 for line in lines if (header := PLAY_HEADER.match(line)))
    assert [article(noun) for noun in ("evader", "runner", "agent", "tagger")] == ["an", "a", "an", "a"]
