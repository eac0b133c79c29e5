"""benchmarks/gpu_session.sh, which no CPU run executes: it parses, an unknown stage is refused with
every stage's name, each stage is named in its header, and every command of every stage parses as
its program (warpsim or a benchmark script) takes it, so that it cannot go stale unseen."""

import argparse
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from doc_blocks import command_error
from helpers import load_script

from warpsim.cli import build_parser

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_session.sh"


def stages() -> list[str]:
    text = SCRIPT.read_text()
    return re.findall(r"^        ([a-z0-9-]+)\)", text[text.index('for stage in "$@"; do'):], re.MULTILINE)


TEST_EXTRAS = ("pettingzoo", "gymnasium", "mpe2", "torchrl", "tensordict", "mypy")
"""Packages of the extra ``test`` that the GPU machine's image lacks."""


@pytest.mark.slow(seconds=18)
def test_the_gpu_tests_collect_where_the_test_extras_are_missing(tmp_path):
    """As on the GPU machine: a module that needs one of them skips what needs it, and no module fails to
    collect (a module that did would take its GPU tests with it, unseen by any CPU run)."""
    for name in TEST_EXTRAS:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f'raise ModuleNotFoundError("No module named {name!r}", '
                                                      f'name={name!r})\n')
    paths = [str(tmp_path), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "gpu", "-n", "0",
                             "-p", "no:cacheprovider", "tests"], cwd=SCRIPT.parent.parent, capture_output=True,
                            text=True, timeout=300, env=dict(os.environ, PYTHONPATH=os.pathsep.join(paths)))
    assert result.returncode == 0 and " error" not in result.stdout.splitlines()[-1], result.stdout[-3000:]


def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True).returncode == 0


def test_an_unknown_stage_is_refused_with_every_stages_name(tmp_path):
    result = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out"), "no-such-stage"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2 and "unknown stage no-such-stage" in result.stderr
    listed = re.search(r"\((.*)\)", result.stderr).group(1).split(", ")  # type: ignore[union-attr]
    assert listed == stages() and len(listed) > 10


def test_every_stage_is_named_in_the_header():
    header = SCRIPT.read_text().split("set -uo pipefail")[0]
    assert [stage for stage in stages() if not re.search(rf"(?<![\w-]){re.escape(stage)}(?![\w-])", header)] == []


def test_a_peer_stage_without_the_carried_wheels_says_where_to_name_them(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "PEER_WHEELS"}
    env["PEER_SITE"] = str(tmp_path / "site")
    result = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out"), "peers-mpe", "mpe"], capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    summary = (tmp_path / "out" / "summary.txt").read_text().splitlines()
    assert summary == ["=== peers: set PEER_WHEELS to the folder of carried wheels (benchmarks/peers/README.md)"] * 2


def test_a_step_past_its_limit_is_interrupted_as_by_ctrl_c_and_its_output_kept(tmp_path):
    """So that pytest still prints the failures so far, and training saves its checkpoint."""
    text = SCRIPT.read_text()
    step = text[text.index("step() {"):text.index("\n}\n", text.index("step() {")) + 3]
    waits = "import time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    print('interrupted, saved')"
    command = f"step waits 1 {shlex.quote(sys.executable)} -c {shlex.quote(waits)}"
    script = f"out={shlex.quote(str(tmp_path))}\n{step}{command}"
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert "interrupted, saved" in (tmp_path / "waits.log").read_text(), result.stdout + result.stderr
    assert re.fullmatch(r"=== waits: exit 124 after [12] s\n", (tmp_path / "summary.txt").read_text())


VALUES = {"out": "/tmp/out", "run": "/tmp/out/runs/tag-chase", "preset": "tag-chase", "name": "tag-chase",
          "name//-/_": "tag_chase", "metric": "episode_length", "config": "headline", "search": "grid",
          "peer_site": "/tmp/site", "kernels": "loss"}
"""What the script's variables hold where its commands use them (a stage's own values)."""
SEPARATORS = {";", ";;", "&&", "||", "|"}


def session_commands() -> list[tuple[str, list[str]]]:
    """Every command a stage runs, as (program, arguments): a benchmark script (``benchmarks/NAME.py``)
    or ``warpsim``; the script's ``bench`` and ``learn`` calls as the warpsim commands they run."""
    commands = []
    for line in SCRIPT.read_text().replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(re.split(r"\s#\s", line)[0], posix=True, punctuation_chars="&|;")
        lexer.whitespace_split = True
        words = list(lexer)
        for start, word in enumerate(words):
            end = next((index for index in range(start, len(words)) if words[index] in SEPARATORS), len(words))
            rest = [word for word in words[start + 1:end] if word != "$@"]  # a function's own arguments
            if word == "python3" and rest and rest[0].startswith("benchmarks/"):
                commands.append((rest[0], rest[1:]))
            elif word == "warpsim":
                commands.append(("warpsim", rest))
            elif word == "bench" and start == 0:
                commands.append(("warpsim", ["bench", "--no-baseline", "--results-dir", "/tmp/out/bench", *rest[2:]]))
            elif word == "learn" and start == 0:
                commands.append(("warpsim", ["train", "--config", rest[0], "--run-dir", "/tmp/out/runs/x", *rest[3:]]))
            elif word == "learn_as" and start == 0 and len(rest) > 3:  # not learn's own call of it
                commands.append(("warpsim", ["train", "--config", rest[1], "--run-dir", "/tmp/out/runs/x", *rest[4:]]))
    return [(program, [expanded(text) for text in arguments]) for program, arguments in commands]


def expanded(text: str) -> str:
    """``text`` with the script's variables (``$name``, ``${name}``) replaced by their VALUES."""
    return re.sub(r"\$\{([^}]*)\}|\$(\w+)", lambda match: VALUES[match.group(1) or match.group(2)], text)


class Parsed(Exception):
    """A script's arguments parsed: stop before it runs anything."""


def test_every_command_of_every_stage_parses_as_its_program_takes_it(monkeypatch):
    commands = session_commands()
    scripts = {program for program, _ in commands if program != "warpsim"}
    assert len(commands) > 40 and len(scripts) > 10, "the commands were found"
    errors = [f"warpsim {' '.join(arguments)}: {error}" for program, arguments in commands if program == "warpsim"
              if (error := command_error(build_parser(), arguments))]
    parse_args = argparse.ArgumentParser.parse_args

    def parse_only(parser, args=None, namespace=None):
        parse_args(parser, args, namespace)
        raise Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_only)
    # as on the GPU machine the session runs on, where a --device cuda is there
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    parsed = 0
    for program, arguments in commands:
        if program == "warpsim":
            continue
        try:
            module = load_script(SCRIPT.parent.parent / program)
        except ImportError:
            continue  # a peer's script whose packages only the GPU machine's stage installs
        monkeypatch.setattr(sys, "argv", [program, *arguments])
        said = io.StringIO()
        try:
            with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
                module.main()
        except Parsed:
            parsed += 1
            continue
        except SystemExit:
            errors.append(f"{program} {' '.join(arguments)}: {said.getvalue().strip().splitlines()[-1]}")
    assert errors == [] and parsed > 20


def test_every_benchmark_that_saves_only_where_told_is_told_where():
    """A benchmark script saves its records only to the --results-dir it is given: a stage that gave none would
    lose them with the machine."""
    saving = {path.name for path in (SCRIPT.parent).glob("*.py") if "add_results_dir(parser)" in path.read_text()}
    calls = [(program, arguments) for program, arguments in session_commands()
             if program.removeprefix("benchmarks/") in saving]
    assert len({program for program, _ in calls}) >= 6
    assert [program for program, arguments in calls if "--results-dir" not in arguments] == []
