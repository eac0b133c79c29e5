"""Optional parts: install.sh shows its progress, and a missing extra is named the way this
warpsim was installed (./install.sh in a checkout set up by it, pip otherwise)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from warpsim.errors import UnavailableError
from warpsim.extras import install_hint

REPO = Path(__file__).resolve().parents[1]
FAKE_PYTHON = """#!/usr/bin/env bash
# Stands for python3 and the venv's python: records what it is asked and succeeds.
echo "$@" >> "$LOG"
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python"; fi
"""


def test_a_checkout_installed_by_install_sh_is_told_to_use_it(monkeypatch):
    monkeypatch.setattr(sys, "prefix", str(REPO / ".venv"))
    assert install_hint("plots").startswith("./install.sh plots")


def test_another_installation_is_told_to_use_pip_on_its_checkout(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "some-env"))
    assert install_hint("plots") == f"pip install -e '{REPO}[plots]'", "warpsim is on no package index"


def test_render_without_matplotlib_names_the_hint(monkeypatch, tmp_path):
    import warpsim
    from warpsim.analysis.render import write_gif

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # None: "import matplotlib" fails
    env = warpsim.make("tag_gridworld", 1, backend="numpy")
    with pytest.raises(UnavailableError, match="rendering needs matplotlib: " + install_hint("plots").split()[0]):
        write_gif([env.frame(0)], env, tmp_path / "episode.gif")


def test_install_sh_says_what_it_is_doing(tmp_path):
    checkout, bin_dir = tmp_path / "checkout", tmp_path / "bin"
    checkout.mkdir()
    bin_dir.mkdir()
    (checkout / "install.sh").write_text((REPO / "install.sh").read_text())
    fake = bin_dir / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    log = tmp_path / "calls.log"
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin", "LOG": str(log)}
    done = subprocess.run(["bash", str(checkout / "install.sh"), "plots"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    steps = [line for line in lines if line.startswith("[")]
    assert [step[:5] for step in steps] == ["[1/3]", "[2/3]", "[3/3]"], done.stdout
    assert "virtual environment" in steps[0] and "torch" in steps[1] and "plots" in steps[2]
    assert any("install -e .[plots" in call for call in log.read_text().splitlines())
    assert lines[-1].startswith("warpsim is installed in")
