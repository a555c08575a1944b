# Copyright (c) 2026 The ovs-daqring authors.
#
# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License.  You may obtain
# a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
"""The shell examples of the documentation run as written.

Like upstream's tests of its tutorials, the commands are taken from the
.rst pages themselves (DOCS), run inside one sandbox
(utilities/ovs-daqring-sandbox: the built switch, bridge br0 with ports
p1..p4, PATH and OVS_RUNDIR set) as one script, "sh -e", in a fresh
directory, and what each prints is compared with what the page shows.

The convention, rst comments that a reader of the page never sees
(Documentation/internals/python.rst, "Tests"):

``.. sandbox-example``
    The next literal block is run.  Its commands are the lines that start
    with ``$ `` (or the sandbox's prompt ``(daqring-sandbox) # ``); the
    lines after a command that are indented deeper than its ``$`` continue
    it (a trailing ``\\``, the body of a ``for`` loop); the other lines up
    to the next command are its expected output (stdout and stderr),
    compared after collapsing runs of blanks (tables are aligned to their
    contents).  In the expected output, a line ``...`` stands for any
    number of lines, ``...`` inside a line for any text, and so do the
    variable parts, normalised in both texts: durations (``0.050 s``),
    times of day, UUIDs and OpenFlow port numbers in ``ovs-daqctl show``'s
    OFPORT column.  Lines before the first command (the start of
    ``make sandbox``) are not checked, and ``exit`` is not run.  A command
    that fails stops the script (sh -e), which fails the test.
``.. sandbox-example: exit N``
    The same, for a block whose commands show a failure: each must exit
    with status N (a bad map's 2).
``.. sandbox-file: NAME``
    The next literal block is written to the file NAME, for the commands
    after it (a map the page shows, then applies).
``.. sandbox-run: COMMAND``
    COMMAND is run there, its output not checked: what a page says in
    words ("with a daqring dcm7", "remove it first") but shows no command
    for.

Blocks without a comment are not run (examples for another machine, or
with the output of traffic).  The whole run takes about 20 s (DPDK's
start and stop); it needs root and the build in ovs/ (skipped without
them) and is marked "machine".
"""

import os
import re
import subprocess
from pathlib import Path
from typing import Iterator, List, NamedTuple, Optional, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
SANDBOX = ROOT / "utilities" / "ovs-daqring-sandbox"
OVS = ROOT / "ovs"
DOCS = ["Documentation/topics/daqring.rst",
        "Documentation/topics/ovs-daqctl.rst"]
# A bound on a hang, not a timing.
TIMEOUT_S = 300

MARK_RE = re.compile(r"^\.\. sandbox-(example|file|run)(?::\s*(.*))?$")
PROMPTS = ("$ ", "(daqring-sandbox) # ")
# What each command's output starts with in the script's output.
SEP = "@@docs-example@@ "


class Step(NamedTuple):
    where: str            # FILE:LINE of the command or block
    kind: str             # "command", "file" or "run"
    text: str             # the command, or the file's contents
    expected: List[str]   # expected output lines ("command" only)
    arg: str              # the file's name, or a command's exit status


# ================================================================ extract
def literal_block(lines: List[str], i: int, where: str
                  ) -> Tuple[List[Tuple[int, str]], int]:
    """The literal block after line I (a marker comment): its lines,
    unindented, with their line numbers, and the index after it."""
    while i < len(lines) and not lines[i].rstrip().endswith("::"):
        i += 1
    if i == len(lines):
        raise AssertionError("%s: no literal block ('::') after the "
                             "marker" % where)
    i += 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    block: List[Tuple[int, str]] = []
    indent: Optional[int] = None
    while i < len(lines):
        line = lines[i].rstrip()
        if line:
            n = len(line) - len(line.lstrip())
            if indent is None:
                indent = n
            if n < (indent or 1):
                break
            block.append((i + 1, line[indent:]))
        else:
            block.append((i + 1, ""))
        i += 1
    while block and not block[-1][1]:
        block.pop()
    if not block:
        raise AssertionError("%s: empty literal block" % where)
    return block, i


def commands(block: List[Tuple[int, str]], name: str, status: str = ""
             ) -> Iterator[Step]:
    """The commands of one example block, with their expected output."""
    cmd: List[str] = []
    out: List[str] = []
    where = ""
    cont = 0
    for lineno, line in block:
        prompt = next((p for p in PROMPTS if line.startswith(p)), None)
        if prompt is not None:
            if cmd:
                yield Step(where, "command", "\n".join(cmd), out, status)
            cmd, out, where = [line[len(prompt):]], [], "%s:%d" % (
                name, lineno)
            cont = len(prompt)
        elif cmd and not out and line.startswith(" "):
            # Deeper than the "$": the command goes on.
            cmd.append(line[cont:] if line[:cont].isspace()
                       else line.lstrip())
        elif cmd:
            out.append(line)
    if cmd:
        yield Step(where, "command", "\n".join(cmd), out, status)


def extract(path: Path) -> List[Step]:
    """Every marked step of one page, in order."""
    name = str(path.relative_to(ROOT))
    lines = path.read_text().splitlines()
    steps: List[Step] = []
    i = 0
    while i < len(lines):
        m = MARK_RE.match(lines[i].rstrip())
        if not m:
            i += 1
            continue
        kind, arg = m.group(1), (m.group(2) or "").strip()
        where = "%s:%d" % (name, i + 1)
        if kind == "run":
            assert arg, "%s: sandbox-run without a command" % where
            steps.append(Step(where, "run", arg, [], ""))
            i += 1
            continue
        block, i = literal_block(lines, i + 1, where)
        if kind == "file":
            assert re.match(r"^[\w.-]+$", arg), \
                "%s: sandbox-file needs a plain file name" % where
            steps.append(Step(where, "file", "\n".join(
                line for _, line in block) + "\n", [], arg))
            continue
        m = re.match(r"^(?:exit ([1-9]\d{0,2}))?$", arg)
        assert m, "%s: sandbox-example takes only 'exit N'" % where
        found = [s for s in commands(block, name, m.group(1) or "")
                 if s.text.strip() != "exit"]
        assert found, "%s: no command in the example" % where
        steps.extend(found)
    return steps


def all_steps() -> List[Step]:
    return [s for doc in DOCS for s in extract(ROOT / doc)]


# ================================================================ script
def quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def script(steps: List[Step]) -> str:
    """One sh script: each command's output after a separator line;
    a command that fails unexpectedly stops it (sh -e)."""
    out = ["exec 2>&1"]
    for n, s in enumerate(steps):
        if s.kind == "file":
            out.append("printf '%%s' %s > %s" % (quote(s.text), s.arg))
        elif s.kind == "run":
            out.append("echo %s" % quote("%s%d run" % (SEP, n)))
            out.append(s.text)
        elif s.arg:
            # The page shows it failing: its exit status, not sh -e.
            out.append("echo %s" % quote("%s%d" % (SEP, n)))
            out.append("if %s\nthen rc=0; else rc=$?; fi" % s.text)
            out.append('[ "$rc" = %s ] || { echo "%s%d exit $rc"; exit 1; }'
                       % (s.arg, SEP, n))
        else:
            out.append("echo %s" % quote("%s%d" % (SEP, n)))
            out.append(s.text)
    out.append("echo %s" % quote(SEP + "end"))
    return "\n".join(out) + "\n"


def outputs(text: str) -> Tuple[dict, str]:
    """{step index: output lines} from the script's output, and the
    separator line of the last step that ran."""
    got: dict = {}
    last = ""
    cur: Optional[List[str]] = None
    for line in text.splitlines():
        if line.startswith(SEP):
            last = line[len(SEP):]
            tok = last.split()
            cur = got.setdefault(int(tok[0]), []) \
                if tok[0].isdigit() and len(tok) == 1 else None
        elif cur is not None:
            cur.append(line)
    return got, last


# ================================================================ compare
NORMALISE = [
    (re.compile(r"\b\d+(\.\d+)? s\b"), "N s"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "HH:MM:SS"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                r"[0-9a-f]{12}\b"), "UUID"),
    # ovs-daqctl show: DCM RING OFPORT ... (ofports depend on the order
    # in which ovs-vswitchd numbers the new ports).
    (re.compile(r"^(\S+ \S+ )\d+( )(?=\S+ \S+ (two-rule|bound))"),
     r"\1OFPORT\2"),
]


def normalise(line: str) -> str:
    line = " ".join(line.split())
    for rx, sub in NORMALISE:
        line = rx.sub(sub, line)
    return line


def line_matches(want: str, got: str) -> bool:
    parts = [re.escape(p) for p in want.split("...")]
    return re.fullmatch(".*".join(parts), got) is not None


def matches(want: List[str], got: List[str]) -> bool:
    """GOT matches WANT, where a line "..." stands for any lines."""
    want = [normalise(w) for w in want]
    got = [normalise(g) for g in got]
    while want and not want[-1]:
        want.pop()
    while got and not got[-1]:
        got.pop()

    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and line_matches(want[i], got[j]) and \
            match(i + 1, j + 1)
    return match(0, 0)


# ================================================================ tests
def test_extract_conventions(tmp_path: Path) -> None:
    """The extraction of commands, continuations, output and files."""
    page = ROOT / "Documentation" / "topics" / "daqring.rst"
    steps = extract(page)
    kinds = {s.kind for s in steps}
    assert kinds >= {"command", "run"}, steps
    block = [(1, "$ for i in 1 2; do"), (2, "      echo $i \\"),
             (3, "          x"), (4, "  done"), (5, "1 x"), (6, "..."),
             (7, "$ true")]
    got = list(commands(block, "p.rst"))
    assert got[0].arg == "" and \
        list(commands(block, "p.rst", "2"))[0].arg == "2"
    assert [s.text for s in got] == [
        "for i in 1 2; do\n    echo $i \\\n        x\ndone", "true"]
    assert got[0].expected == ["1 x", "..."] and got[1].expected == []
    assert matches(["a  b", "...", "z ... end"],
                   ["a b", "x", "y", "z 12 end"])
    assert not matches(["a", "b"], ["a", "c"])
    assert not matches(["a"], ["a", "b"])
    assert matches(["took 0.050 s"], ["took 1.2 s"])
    assert matches(["dcm1   dcm1        9  10.0.0.1  p1  two-rule  1"],
                   ["dcm1 dcm1 5 10.0.0.1 p1 two-rule 1"])


def test_docs_have_examples() -> None:
    """Each page has marked examples, and every one has a command."""
    for doc in DOCS:
        steps = extract(ROOT / doc)
        assert any(s.kind == "command" for s in steps), doc


@pytest.mark.machine
def test_docs_examples_run(tmp_path: Path) -> None:
    """Every marked example of DOCS runs as written in one sandbox and
    prints what its page shows."""
    if os.geteuid() != 0:
        pytest.skip("needs root (DPDK, hugepages)")
    if not os.access(OVS / "vswitchd" / "ovs-vswitchd", os.X_OK):
        pytest.skip("needs the build in ovs/ (make)")
    steps = all_steps()
    path = tmp_path / "examples.sh"
    path.write_text(script(steps))
    p = subprocess.run([str(SANDBOX), "--", "sh", "-e", str(path)],
                       capture_output=True, text=True, timeout=TIMEOUT_S,
                       cwd=str(tmp_path), stdin=subprocess.DEVNULL)
    got, last = outputs(p.stdout)
    problems = []
    if last != "end":
        tok = last.split()
        n = int(tok[0]) if tok and tok[0].isdigit() else None
        s = steps[n] if n is not None else None
        problems.append(
            "%s: the example did not run as written (exit status %d, "
            "the script's last mark: %r):\n"
            "$ %s\n%s" % (s.where if s else "?", p.returncode, last,
                          s.text if s else "",
                          "\n".join(got.get(n, [])) if n is not None
                          else p.stdout[-2000:]))
    for n, s in enumerate(steps):
        if s.kind != "command" or n not in got:
            continue
        if not matches(s.expected, got[n]):
            problems.append("%s: $ %s\nthe page shows:\n%s\nit printed:\n%s"
                            % (s.where, s.text, "\n".join(s.expected),
                               "\n".join(got[n])))
    assert not problems, "\n\n".join(problems) + "\n\nsandbox: " + \
        p.stderr[-3000:]
    assert p.returncode == 0, p.stderr[-3000:]
