"""docs/custom_envs.md cannot rot: its file blocks are the template's files, its code runs."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TUTORIAL = REPO / "docs" / "custom_envs.md"
BLOCK = re.compile(r"(?:<!-- file: (?P<file>\S+) -->\n)?```python\n(?P<code>.*?)```", re.DOTALL)


def blocks():
    return [(match["file"], match["code"]) for match in BLOCK.finditer(TUTORIAL.read_text())]


def test_the_tutorial_shows_the_template_files_exactly():
    shown = {file: code for file, code in blocks() if file}
    assert set(shown) == {f"envs/template/{name}.py" for name in ("params", "reference", "kernels", "env")}
    for file, code in shown.items():
        assert code == (REPO / file).read_text(), f"docs/custom_envs.md shows an outdated {file}"


def test_the_tutorial_code_runs_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    runnable = [code for file, code in blocks() if not file]
    assert len(runnable) >= 3
    for number, code in enumerate(runnable):
        exec(compile(code, f"{TUTORIAL.name} block {number}", "exec"), namespace)
