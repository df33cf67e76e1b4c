#!/usr/bin/env python3
"""tests/valgrind/check-logs.py LOGDIR EXTDIR: summarise memcheck's logs.

Every server process run under memcheck (tests/valgrind/run.sh) writes
LOGDIR/<pid>.log; valgrind brackets each error it reports with the markers
VALGRINDERROR-BEGIN / VALGRINDERROR-END.  An error "involves the extension"
when a frame of its stacks (where it happened, where the block was
allocated or freed, where an uninitialised value came from) is in eddy.so or
in a source file under EXTDIR.

Prints every distinct error (by its first line and top frames) with the
number of times it occurred, the extension's first; exits 1 if any error
involves the extension, 2 if there are other errors and --strict is given,
else 0.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import re
import sys

PREFIX = re.compile(r"^==\d+==\s?")
FRAME = re.compile(r"^\s*(?:at|by) 0x[0-9A-Fa-f]+: (.*)$")


def errors_of(path: pathlib.Path) -> list[list[str]]:
    out: list[list[str]] = []
    cur: list[str] | None = None
    for raw in path.read_text(errors="replace").splitlines():
        line = PREFIX.sub("", raw)
        if line.strip() == "VALGRINDERROR-BEGIN":
            cur = []
        elif line.strip() == "VALGRINDERROR-END":
            if cur is not None:
                out.append([x for x in cur if x.strip()])
            cur = None
        elif cur is not None:
            cur.append(line)
    if cur:  # the process died in the middle of a report
        out.append([x for x in cur if x.strip()] + ["(report truncated)"])
    return out


def key_of(err: list[str]) -> tuple[str, ...]:
    """First line (without addresses and sizes) and the top 6 frames."""
    head = re.sub(r"0x[0-9A-Fa-f]+|\d+ bytes", "#", err[0]) if err else ""
    frames = []
    for line in err[1:]:
        m = FRAME.match(line)
        if m:
            frames.append(re.sub(r":\d+\)$", ")", m.group(1)))
        if len(frames) == 6:
            break
    return (head, *frames)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("logdir", type=pathlib.Path)
    ap.add_argument("extdir", help="the extension's source directory")
    ap.add_argument("--strict", action="store_true",
                    help="also fail on errors that do not involve the extension")
    args = ap.parse_args()

    ext_marks = ("eddy.so", str(pathlib.Path(args.extdir).resolve()) + "/")
    logs = sorted(args.logdir.glob("*.log"))
    seen: dict[tuple[str, ...], list[str]] = {}
    count: collections.Counter = collections.Counter()
    involves: dict[tuple[str, ...], bool] = {}
    where: dict[tuple[str, ...], str] = {}
    for log in logs:
        for err in errors_of(log):
            k = key_of(err)
            count[k] += 1
            if k not in seen:
                seen[k] = err
                where[k] = log.name
                involves[k] = any(m in line for line in err for m in ext_marks)

    ours = [k for k in seen if involves[k]]
    others = [k for k in seen if not involves[k]]
    print(f"valgrind: {len(logs)} process logs, {sum(count.values())} errors "
          f"({len(seen)} distinct): {sum(count[k] for k in ours)} involve the extension "
          f"({len(ours)} distinct), {sum(count[k] for k in others)} do not")
    for title, keys in (("INVOLVING THE EXTENSION", ours), ("NOT INVOLVING THE EXTENSION", others)):
        for k in keys:
            print(f"\n--- {title}: {count[k]} x, first in {where[k]}")
            print("\n".join(seen[k][:60]))
    if ours:
        return 1
    if others and args.strict:
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
