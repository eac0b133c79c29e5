"""The docs cannot rot: their Python blocks run, their file blocks are the repository's files,
every warpsim command line in their shell blocks parses with the real command line, and
their links lead somewhere."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from doc_blocks import SHELL_LANGUAGES, DocBlockError, command_error, parse_blocks, run_python, warpsim_commands

from warpsim.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TEMPLATE_FILES = {f"envs/template/{name}.py" for name in ("params", "reference", "kernels", "env")}
CODE_BLOCK = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def page_name(path: Path) -> str:
    return str(path.relative_to(REPO))


def blocks_of(path: Path):
    return parse_blocks(path.read_text(), page_name(path))


def every_block():
    return [block for path in PAGES for block in blocks_of(path)]


def prose(path: Path) -> str:
    return CODE_BLOCK.sub("", path.read_text())


@pytest.mark.parametrize("path", PAGES, ids=page_name)
def test_the_python_blocks_of_a_page_run_in_order(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_python(blocks_of(path))


def test_file_blocks_are_the_repository_files():
    shown = [block for block in every_block() if block.file]
    assert TEMPLATE_FILES <= {block.file for block in shown if block.page == "docs/custom_envs.md"}
    for block in shown:
        assert block.code == (REPO / block.file).read_text(), f"{block.where} shows an outdated {block.file}"


def test_every_warpsim_command_in_the_docs_parses():
    parser = build_parser()
    commands = [(block, arguments) for block in every_block() if block.language in SHELL_LANGUAGES
                for arguments in warpsim_commands(block)]
    assert ["train", "--config", "tag-small"] in [arguments for _, arguments in commands]  # README's first command
    errors = [f"{block.where}: warpsim {' '.join(arguments)}: {error}" for block, arguments in commands
              if (error := command_error(parser, arguments))]
    assert not errors, "\n".join(errors)


def heading_anchors(path: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", prose(path), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def test_relative_links_lead_to_files_and_headings():
    broken = []
    for path in PAGES:
        for target in LINK.findall(prose(path)):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            file, _, anchor = target.partition("#")
            linked = (path.parent / file) if file else path
            if not linked.exists() or (anchor and anchor not in heading_anchors(linked)):
                broken.append(f"{page_name(path)}: {target}")
    assert not broken, "broken links: " + ", ".join(broken)



RULES = REPO / "docs" / "tag_rules.md"
CITATION = re.compile(r"docs/tag_rules\.md section (?P<section>\d+)(?: steps? (?P<steps>\d+(?:(?:, | and )\d+)*))?")
CITING_FOLDERS = ("envs", "kernels", "warpsim", "tests")


def rule_steps() -> dict[int, set[int]]:
    """The numbered sections of docs/tag_rules.md and the numbered steps under each one's "A step"."""
    steps: dict[int, set[int]] = {}
    section, in_steps = None, False
    for line in prose(RULES).splitlines():
        if heading := re.match(r"## (\d+)\. ", line):
            section, in_steps = int(heading.group(1)), False
            steps[section] = set()
        elif line.startswith("### "):
            in_steps = line == "### A step"
        elif in_steps and section is not None and (item := re.match(r"(\d+)\. ", line)):
            steps[section].add(int(item.group(1)))
    return steps


def citations() -> list[tuple[str, int, list[int]]]:
    """(file, section, steps) for every citation of docs/tag_rules.md in the code and the tests."""
    found = []
    for folder in CITING_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            text = " ".join(path.read_text().split())  # a citation may break across lines
            for cited in CITATION.finditer(text):
                steps = [int(step) for step in re.findall(r"\d+", cited.group("steps") or "")]
                found.append((str(path.relative_to(REPO)), int(cited.group("section")), steps))
    return found


def test_every_cited_section_and_step_of_the_tag_rules_exists():
    rules, cited = rule_steps(), citations()
    assert {1: set(range(1, 8)), 2: {1, 2, 3, 4}}.items() <= rules.items(), "the steps of both tag games are numbered"
    assert {(section, step) for _, section, steps in cited for step in steps} >= {(1, 5), (2, 3)}
    missing = [f"{file}: section {section} step(s) {steps}" for file, section, steps in cited
               if section not in rules or not set(steps) <= rules[section]]
    assert not missing, "cited but not in docs/tag_rules.md: " + "; ".join(missing)
    stale = [str(path.relative_to(REPO)) for folder in CITING_FOLDERS for path in (REPO / folder).rglob("*.py")
             if "TAG_SPEC" in path.read_text() and path != Path(__file__)]
    assert not stale, "these cite rules the repository does not hold (TAG_SPEC): " + ", ".join(stale)

def test_every_block_names_its_language():
    # An unlabelled block would be neither run nor parsed; 'text' marks output and other prose.
    unlabelled = [block.where for block in every_block() if not block.language]
    assert not unlabelled, f"give these blocks a language (python, bash, text, ...): {', '.join(unlabelled)}"


def test_blocks_marked_skip_are_listed():
    skipped = [f"{block.where}: {block.skip}" for block in every_block() if block.skip]
    if skipped:
        pytest.skip("not run: " + "; ".join(skipped))


# ----- the checks catch planted errors --------------------------------------------------------
PLANTED = '''# A page

```python
value = 2
```

<!-- skip: needs a GPU -->
```python
raise RuntimeError("never run")
```

```python
assert value == 2  # the namespace carries over
missing_function(value)
```

```bash
warpsim train --config tag-small --no-such-flag
warpsim trian --config tag-small
.venv/bin/warpsim bench --config nowhere   # a comment
./install.sh && NUMBA_ENABLE_CUDASIM=1 warpsim check beacon --steps 8
```
'''


def test_a_failing_block_is_named_by_its_page_and_number():
    with pytest.raises(DocBlockError, match=r"planted\.md python block 3 \(line 12\) failed: NameError: "
                                             r"name 'missing_function' is not defined"):
        run_python(parse_blocks(PLANTED, "planted.md"))


def test_a_block_marked_skip_is_returned_not_run():
    blocks = parse_blocks(PLANTED, "planted.md")
    (skipped,) = run_python([block for block in blocks if block.number < 3])
    assert skipped.number == 2 and skipped.skip == "needs a GPU"


def test_an_unknown_subcommand_flag_or_value_is_caught():
    (shell,) = [b for b in parse_blocks(PLANTED, "planted.md") if b.language == "bash"]
    commands = warpsim_commands(shell)
    assert commands[3] == ["check", "beacon", "--steps", "8"]
    errors = [command_error(build_parser(), arguments) or "" for arguments in commands]
    assert "unrecognized arguments: --no-such-flag" in errors[0]
    assert "invalid choice: 'trian'" in errors[1]
    assert "invalid choice: 'nowhere'" in errors[2]
    assert errors[3] == ""


def test_a_marker_away_from_its_block_is_refused():
    stray = "<!-- skip: needs a GPU -->\nSome prose.\n\n```python\npass\n```\n"
    with pytest.raises(ValueError, match="stray.md line 2: a <!-- skip: ... --> comment must come right before"):
        parse_blocks(stray, "stray.md")


# ----- what custom-environment authors asked for is on the tutorial's page -----------------
@pytest.mark.parametrize("topic, needed", [
    ("where an environment lives", ["### Where your environment lives", "warpsim.envs.template",
                                    "from predprey import kernels, reference"]),
    ("state dtypes", ["STATE_DTYPES =="]),
    ("registering twice", ["is refused", 'if "beacon_v2" not in warpsim.registered():']),
    ("command line", ["## 9. Use it from the command line", "package.module:Class",
                      '[project.entry-points."warpsim.envs"]']),
    ("Frame fields", ["| `positions` | float[N, 2] |", "| `active` | bool[N] |", "| `extent` | float |",
                      "| `time` | int |"]),
    ("random draws in a step", ["## 10. Random numbers during a step", "below 2**32", "np.uint64"]),
    ("bench declarations", ["observation_label", "distance_evaluations_per_step", '"unknown"']),
    ("Python numbers in launches", ["A Python float or int never reaches"]),
    ("launch by name", ["self.run(kernel", "add_constants", "naming the kernel and the\nparameter",
                        "before (positional launches)"]),
])
def test_the_custom_environment_tutorial_covers(topic, needed):
    page = (REPO / "docs" / "custom_envs.md").read_text()
    missing = [text for text in needed if text not in page]
    assert not missing, f"docs/custom_envs.md does not cover {topic}: {missing}"


@pytest.mark.parametrize("heading", ["## 10. Random numbers during a step", "## 11. Nearest neighbours on a grid"])
def test_a_kernel_block_runs_as_written_in_a_fresh_process(heading):
    """A reader without a GPU runs the block in a Python of their own: it must choose the simulator itself."""
    page = (REPO / "docs" / "custom_envs.md").read_text()
    section = page[page.index(heading):]
    code = next(block.code for block in parse_blocks(section, "custom_envs.md") if block.language == "python")
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
