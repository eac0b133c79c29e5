"""One version, in warpsim/__init__.py: the installed package's, --version's and the changelog's."""

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import warpsim
from warpsim.cli import main
from warpsim.source_commit import source_commit

ROOT = Path(__file__).resolve().parent.parent


def test_the_installed_version_is_the_packages():
    assert metadata.version("warpsim") == warpsim.__version__
    assert "version = attr: warpsim.__version__" in (ROOT / "setup.cfg").read_text()


def test_version_prints_the_version_and_the_commit(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    line = capsys.readouterr().out.strip()
    commit = source_commit()
    if commit is None:
        assert line == f"warpsim {warpsim.__version__}"
    else:
        assert line == (f"warpsim {warpsim.__version__} (commit {commit['commit'][:12]}"
                        f"{'' if commit['clean'] else ', modified'})")


def test_version_needs_no_subcommand():
    done = subprocess.run([sys.executable, "-m", "warpsim.cli", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith(f"warpsim {warpsim.__version__}")


def test_the_changelog_names_the_coming_version_under_unreleased():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    unreleased = re.search(r"^## \[Unreleased\] \((\S+)\)$", changelog, re.MULTILINE)
    assert unreleased, "CHANGELOG.md starts its changes with '## [Unreleased] (NEXT VERSION)'"
    assert warpsim.__version__ in (unreleased[1], f"{unreleased[1]}.dev0")
