"""The fenced code blocks of Markdown pages: read, run (Python) and parsed (warpsim command lines).

A comment line right before a block changes how it is treated:

* ``<!-- file: PATH -->``: the block shows the repository's file PATH, which it must equal;
  it is compared, not run (the package imports it).
* ``<!-- skip: REASON -->``: a Python block that cannot run here (e.g. it needs a GPU);
  it is listed as skipped with its reason.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^```(?P<language>\S*)\s*$")
MARKER = re.compile(r"^<!-- (?P<kind>file|skip): (?P<value>.+?) -->$")
SHELL_LANGUAGES = ("bash", "sh", "shell", "console")
COMMAND_SEPARATORS = ("&&", "||", ";", "|")


@dataclass(frozen=True)
class Block:
    """One fenced code block; ``number`` counts the page's blocks of the same language from 1."""

    page: str
    number: int
    line: int
    language: str
    code: str
    file: str | None = None
    skip: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page} {self.language or 'unlabelled'} block {self.number} (line {self.line})"


class DocBlockError(Exception):
    """A Python block of the docs raised; the message names the page and the block."""


def parse_blocks(markdown: str, page: str) -> list[Block]:
    """Every fenced block of the Markdown text of ``page`` (the name messages give)."""
    lines = markdown.splitlines(keepends=True)
    blocks: list[Block] = []
    counts: Counter[str] = Counter()
    marker: dict[str, str] = {}
    index = 0
    while index < len(lines):
        text = lines[index].rstrip("\n")
        opening = FENCE.match(text)
        if opening is None:
            found = MARKER.match(text.strip())
            if found:
                marker = {found["kind"]: found["value"]}
            elif text.strip() and marker:
                raise ValueError(f"{page} line {index + 1}: a <!-- {next(iter(marker))}: ... --> comment must "
                                 f"come right before the code block it marks")
            index += 1
            continue
        end = next((j for j in range(index + 1, len(lines)) if lines[j].rstrip("\n") == "```"), None)
        if end is None:
            raise ValueError(f"{page} line {index + 1}: a code block is never closed")
        language = opening["language"]
        counts[language] += 1
        blocks.append(Block(page, counts[language], index + 1, language, "".join(lines[index + 1:end]),
                            marker.get("file"), marker.get("skip")))
        marker = {}
        index = end + 1
    return blocks


def run_python(blocks: list[Block]) -> list[Block]:
    """Runs the Python blocks in order in one namespace; returns those marked skip.

    Raises DocBlockError naming the first block that fails.
    """
    namespace: dict = {}
    skipped = []
    for block in blocks:
        if block.language != "python" or block.file:
            continue
        if block.skip:
            skipped.append(block)
            continue
        try:
            exec(compile(block.code, block.where, "exec"), namespace)
        except Exception as error:
            raise DocBlockError(f"{block.where} failed: {type(error).__name__}: {error}") from error
    return skipped


def warpsim_commands(block: Block) -> list[list[str]]:
    """The arguments given to warpsim by each command of a shell block (``warpsim ARGS``,
    ``.venv/bin/warpsim ARGS``, ``python -m warpsim.cli ARGS``, ``torchrun ... -m warpsim.cli ARGS``)."""
    commands = []
    for line in block.code.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars="&|;")
        lexer.whitespace_split = True
        words = list(lexer)
        start = 0
        for end in [i for i, word in enumerate(words) if word in COMMAND_SEPARATORS] + [len(words)]:
            arguments = _warpsim_arguments(words[start:end])
            if arguments is not None:
                commands.append(arguments)
            start = end + 1
    return commands


def _warpsim_arguments(words: list[str]) -> list[str] | None:
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):
        words = words[1:]  # environment variables, e.g. NUMBA_ENABLE_CUDASIM=1
    if words and Path(words[0]).name == "warpsim":
        return words[1:]
    for i, word in enumerate(words[:-1]):
        if word == "-m" and words[i + 1] in ("warpsim", "warpsim.cli"):
            return words[i + 2:]
    return None


def command_error(parser: argparse.ArgumentParser, arguments: list[str]) -> str | None:
    """What ``parser`` says is wrong with ``arguments`` (unknown subcommand or flag, bad value), or None."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(arguments)
    except SystemExit as exit_:
        if exit_.code:
            return said.getvalue().strip().splitlines()[-1]
    return None
