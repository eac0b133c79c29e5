"""benchmarks/gpu_session.sh, which no CPU run executes: it parses, an unknown stage is refused with
every stage's name, and each stage is named in its header, so that it cannot go stale unseen."""

import os
import re
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu_session.sh"


def stages() -> list[str]:
    text = SCRIPT.read_text()
    return re.findall(r"^        ([a-z0-9-]+)\)", text[text.index('for stage in "$@"; do'):], re.MULTILINE)


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
