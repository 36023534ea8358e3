"""Every ``bayeseval`` command the docs show runs: its sub-commands exist and take its flags.

The commands are read from the fenced code blocks and inline code of ``README.md``,
``docs/**/*.md`` and the notebooks (markdown cells, and ``!bayeseval`` lines of code cells);
a line ending in a backslash continues on the next. Each command is walked down the parser
that ``bayeseval.cli.main.build_parser`` builds (no subprocess), and each ``--flag`` (or
``-x``) it uses must be an option of the (sub)command it names, as its ``--help`` lists.
An inline ``--flag`` in running text (``create`` also takes ``--model``) must be an option of
some ``bayeseval`` command, or of another program's command shown on the same page
(``python benchmarks/run_all.py --budget 20``, ``spark-submit --deploy-mode client``).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
from collections.abc import Iterator
from functools import cache

import pytest

from bayeseval.cli.main import build_parser
from tests.helpers import ROOT

FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1\s*$", re.M | re.S)
INLINE = re.compile(r"`([^`]+)`")  # within a paragraph: inline code may wrap
#: a flag: ``--name`` (with an optional ``=value``) or a one-letter ``-x``
FLAG = re.compile(r"^(--[A-Za-z][\w-]*|-[A-Za-z])(=.*)?$")
#: tokens that end a command (shell operators and redirections)
SHELL_END = {"|", "||", "&&", ";", ">", ">>", "2>", "2>&1", "&", ")"}
#: other programs whose commands the docs show (and any ``*.py`` script)
OTHER_PROGRAMS = {"python", "pip", "pytest", "mkdocs", "spark-submit", "label-studio", "docker", "chromium"}


def _sources() -> Iterator[tuple[str, str]]:
    """``(name, markdown text)`` of README, the docs pages and the notebooks' cells."""
    yield "README.md", (ROOT / "README.md").read_text()
    for path in sorted((ROOT / "docs").rglob("*.md")):
        yield str(path.relative_to(ROOT)), path.read_text()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for number, cell in enumerate(json.loads(path.read_text())["cells"]):
            source = "".join(cell["source"])
            name = f"{path.relative_to(ROOT)}[cell {number}]"
            if cell["cell_type"] == "markdown":
                yield name, source
            else:  # shell escapes of a code cell, as a code block
                lines = [line.lstrip()[1:] for line in source.splitlines() if line.lstrip().startswith("!")]
                if source.startswith("%%bash") or source.startswith("%%sh"):
                    lines = source.splitlines()[1:]
                if lines:
                    yield name, "```bash\n" + "\n".join(lines) + "\n```\n"


def _join_continuations(text: str) -> str:
    return re.sub(r"\\\s*\n", " ", text)


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an unbalanced quote in an example: plain words are good enough
        return text.split("#", 1)[0].split()


def _paragraphs(text: str) -> Iterator[str]:
    yield from re.split(r"\n\s*\n", FENCE.sub("\n\n", text))


def _snippets(text: str) -> Iterator[str]:
    """The code of ``text``: its fenced blocks' lines, then its inline code spans."""
    for match in FENCE.finditer(text):
        yield from _join_continuations(match.group(2)).splitlines()
    for paragraph in _paragraphs(text):
        yield from (" ".join(span.split()) for span in INLINE.findall(paragraph))


def _program_commands(text: str) -> Iterator[tuple[str, list[str]]]:
    """``(program, arguments)`` of each command in ``text``'s code, split at shell operators."""
    for snippet in _snippets(text):
        tokens = _split(snippet.replace("$ ", " "))
        start = 0
        for i, token in enumerate([*tokens, ";"]):
            if token in SHELL_END:
                words = tokens[start:i]
                if words and words[0] == "!":
                    words = words[1:]
                if words[:2] == ["python", "-m"]:
                    words = words[2:]
                if words and not words[0].startswith("-"):
                    yield words[0].lstrip("!"), words[1:]
                start = i + 1


def commands(text: str) -> Iterator[list[str]]:
    """The argument lists of the ``bayeseval`` commands in ``text``'s code (code blocks, inline code)."""
    for program, argv in _program_commands(text):
        if program == "bayeseval" and argv:
            yield argv


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


@cache
def _root() -> argparse.ArgumentParser:
    return build_parser()


def _all_parsers(parser: argparse.ArgumentParser | None = None) -> Iterator[argparse.ArgumentParser]:
    parser = parser or _root()
    yield parser
    for child in _subparsers(parser).values():
        yield from _all_parsers(child)


def problems(argv: list[str]) -> list[str]:
    """What is wrong with ``bayeseval *argv``: unknown sub-commands and flags its parser lacks."""
    parser, path, out = _root(), ["bayeseval"], []
    if any("|" in word and not word.startswith("-") for word in argv[:2]):  # "campaign sync|serve"
        i = next(i for i, word in enumerate(argv) if "|" in word)
        return [p for alt in argv[i].split("|") for p in problems([*argv[:i], alt, *argv[i + 1 :]])]
    words = list(argv)
    while words and _subparsers(parser):
        word = words[0]
        if word.startswith("-") or word in {"...", "COMMAND", "SUBCOMMAND"}:
            break
        if word not in _subparsers(parser):
            out.append(f"{' '.join(path)}: no sub-command {word!r}")
            return out
        parser, path, words = _subparsers(parser)[word], [*path, word], words[1:]
    for word in words:
        match = FLAG.match(word.strip("[]"))  # "[--out DIR]" in a usage line
        if match and match.group(1) not in parser._option_string_actions:
            out.append(f"{' '.join(path)}: no option {match.group(1)}")
    return out


def _names_another_program(paragraph: str) -> bool:
    return any(program in OTHER_PROGRAMS or program.endswith(".py") for program, _ in _program_commands(paragraph))


def prose_flags(text: str) -> Iterator[str]:
    """Flags in inline code of running text (``--stop-level``), outside any ``bayeseval`` command.

    A paragraph that shows another program's command (``python benchmarks/validate_decide.py``)
    is left out: its flags may be that program's.
    """
    for paragraph in _paragraphs(text):
        if _names_another_program(paragraph):
            continue
        for span in INLINE.findall(paragraph):
            if "bayeseval" in span:
                continue  # a whole command: checked by ``commands``
            for word in _split(span):
                match = FLAG.match(word)
                if match and match.group(1).startswith("--"):
                    yield match.group(1)


@cache
def _every_option() -> frozenset[str]:
    return frozenset(opt for p in _all_parsers() for opt in p._option_string_actions)


def _foreign_flags(text: str) -> set[str]:
    """Flags of the other programs' commands that ``text`` shows (``spark-submit --archives``)."""
    return {
        m.group(1)
        for program, argv in _program_commands(text)
        if program != "bayeseval"
        for m in map(FLAG.match, argv)
        if m
    }


SOURCES = list(_sources())


def test_docs_show_bayeseval_commands():
    """The walk finds the commands (a parser that found none would pass anything)."""
    found = [argv for _, text in SOURCES for argv in commands(text)]
    assert len(found) > 40
    assert any(argv[:2] == ["campaign", "create"] for argv in found)


@pytest.mark.parametrize("name, text", SOURCES, ids=[name for name, _ in SOURCES])
def test_every_documented_command_has_its_flags(name, text):
    bad = [f"{p} (in: bayeseval {' '.join(argv)[:80]})" for argv in commands(text) for p in problems(argv)]
    assert not bad, f"{name}:\n" + "\n".join(bad)


@pytest.mark.parametrize("name, text", SOURCES, ids=[name for name, _ in SOURCES])
def test_every_flag_in_running_text_is_an_option(name, text):
    bad = sorted({flag for flag in prose_flags(text) if flag not in _every_option() | _foreign_flags(text)})
    assert not bad, f"{name} names flags no bayeseval command has: {bad}"


@pytest.mark.parametrize(
    "text, expected",
    [
        # an option removed from campaign create, on a continuation line
        (
            "```bash\nbayeseval campaign create --pool p.csv --strata s \\\n    --y-pred p --stop-level 0.9 --db c.db\n```\n",
            ["bayeseval campaign create: no option --stop-level"],
        ),
        # an option of another sub-command (report has --out, campaign status does not)
        (
            "Run `bayeseval campaign status --db c.db --out s.html` to see it.\n",
            ["bayeseval campaign status: no option --out"],
        ),
        # a sub-command that does not exist, after a shell operator
        ("```\ncat x | bayeseval campaign prune --db c.db\n```\n", ["bayeseval campaign: no sub-command 'prune'"]),
        ("```\nbayeseval report data.csv --y-true y --y-pred p --metric=error_rate --weights w=1\n```\n", []),
        ("```\n$ bayeseval campaign ingest --db c.db --labels b.csv  # --no-such-flag in a comment\n```\n", []),
    ],
)
def test_the_check_catches_the_class(text, expected):
    assert [p for argv in commands(text) for p in problems(argv)] == expected


def test_running_text_flags_are_checked():
    text = (
        "`create` also takes `--model`, `--own-check` and `--prior`.\n\n"
        "Run `pytest --lf`.\n\n`--lf` reruns the failures, `--no-such` nothing.\n\n"
        "`python benchmarks/x.py --write` writes; `--only` runs some.\n"
    )
    allowed = _every_option() | _foreign_flags(text)
    assert [f for f in prose_flags(text) if f not in allowed] == ["--own-check", "--no-such"]
