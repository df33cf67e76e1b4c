#!/usr/bin/env python3
"""Compare two runs of PostgreSQL's regression suite: eddy off vs eddy on.

    compare.py [--expected-differences FILE] [--report FILE] OFF_RESULTS ON_RESULTS

OFF_RESULTS and ON_RESULTS are pg_regress `results/` directories holding one
<test>.out per test (psql -a output: the echoed SQL script interleaved with
what the server returned).  Each file is cut into items: result tables
(psql's aligned format: a header line, a `---+---` rule, the rows, the
`(N rows)` footer) and the other lines (echoed SQL, NOTICE/ERROR messages,
psql meta-command output).  The items of the two runs are aligned
(difflib, on the lines and the table headers) and every disagreement becomes a
*difference* attributed to the SQL statement that produced it (the echoed text
just before it) and classified:

    plan      the statement is an EXPLAIN (or calls a function whose name
              contains "explain"): plan text may differ, the eddy shows up there
    settings  the statement lists settings or extensions (pg_settings, SHOW ALL,
              pg_extension, \\dx ...)
    order     a table with the same rows in another order, from a statement
              that has an ORDER BY (ties, or a real ordering bug: reviewed)
    result    a table with other rows
    message   any other line differs: errors, notices, a table in one run only

A table whose rows are the same multiset in both runs, from a statement with no
ORDER BY anywhere in it, is *equal*: SQL promises no row order there.  (A
statement with an ORDER BY anywhere, e.g. inside a window or an aggregate,
is compared row by row.)  Rows that span several lines (a value with a
newline, continued with "+") are compared as one row.

Every difference must match an entry of the reviewed list
(--expected-differences): lines `test | kind | pattern | reason`, where pattern
is `*` or a case-insensitive substring of the statement (whitespace collapsed).
Unmatched differences make the exit status 1; entries that matched nothing are
reported as stale (they do not fail the run: the eddy may stop taking a block).
A test present in one run only is a difference of kind `missing`.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import os
import re
import sys

RULE = re.compile(r"^-+(\+-+)*$")
FOOTER = re.compile(r"^\(\d+ rows?\)$")
ORDER_BY = re.compile(r"\border\s+by\b", re.I)
EXPLAIN = re.compile(r"explain", re.I)
SETTINGS = re.compile(
    r"pg_settings|\bshow\s+all\b|pg_extension|pg_available_extension|^\s*\\dx|pg_file_settings",
    re.I | re.M,
)


class Table:
    __slots__ = ("footer", "header", "rows", "start", "stmt")

    def __init__(self, header, rows, footer, start, stmt):
        self.header = header
        self.rows = rows  # list of rows, each a tuple of lines
        self.footer = footer
        self.start = start  # 1-based line number of the header
        self.stmt = stmt

    def key(self):
        # column names, without the padding that depends on the values
        return ("T", tuple(h.strip() for h in self.header.split("|")))

    def lines(self):
        out = [self.header, "-" * len(self.header)]
        for r in self.rows:
            out.extend(r)
        if self.footer is not None:
            out.append(self.footer)
        return out


class Line:
    __slots__ = ("start", "stmt", "text")

    def __init__(self, text, start, stmt):
        self.text = text
        self.start = start
        self.stmt = stmt

    def key(self):
        return ("L", self.text)

    def lines(self):
        return [self.text]


DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$")


def split_statements(text: str) -> list[str]:
    """Split echoed psql input into statements: on ';' outside quotes,
    dollar quotes and comments, and at psql meta-commands (a backslash ends
    the statement; the meta-command is a statement of its own)."""
    stmts: list[str] = []
    cur: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            # a psql meta-command (\gset, \x, \d ...) to the end of the line
            j = text.find("\n", i)
            j = n if j < 0 else j
            stmts.append("".join(cur))
            stmts.append(text[i:j])
            cur = []
            i = j
            continue
        if c == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in "'\"":
            j = text.find(c, i + 1)
            j = n if j < 0 else j + 1
            cur.append(text[i:j])
            i = j
            continue
        if c == "$":
            m = DOLLAR.match(text, i)
            if m:
                j = text.find(m.group(0), m.end())
                j = n if j < 0 else j + len(m.group(0))
                cur.append(text[i:j])
                i = j
                continue
        if c == ";":
            stmts.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    stmts.append("".join(cur))
    return [s for s in stmts if s.strip()]


def last_statement(lines: list[str]) -> str:
    """The SQL statement whose output follows these echoed lines."""
    stmts = split_statements("\n".join(lines))
    return " ".join(stmts[-1].split()) if stmts else ""


def parse(path: str) -> list:
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    items: list = []
    pending: list[str] = []  # echoed lines since the previous table
    i, n = 0, len(lines)
    while i < n:
        if (i + 1 < n and RULE.match(lines[i + 1]) and lines[i].strip()
                and len(lines[i]) == len(lines[i + 1])):
            # a table: rows until the footer (or a blank line without footer)
            j = i + 2
            rows: list[tuple] = []
            footer = None
            cur: list[str] = []
            while j < n:
                line = lines[j]
                if FOOTER.match(line):
                    footer = line
                    j += 1
                    break
                if line == "" and not cur:
                    break
                cur.append(line)
                if not line.rstrip().endswith("+"):
                    rows.append(tuple(cur))
                    cur = []
                j += 1
            if cur:
                rows.append(tuple(cur))
            stmt = last_statement(pending)
            items.append(Table(lines[i], rows, footer, i + 1, stmt))
            pending = []
            i = j
            continue
        pending.append(lines[i])
        items.append(Line(lines[i], i + 1, None))
        i += 1
    # statement context of a line: the echoed text before it
    ctx: list[str] = []
    for it in items:
        if isinstance(it, Table):
            ctx = []
        else:
            it.stmt = last_statement([*ctx, it.text])
            ctx.append(it.text)
    return items


def classify_stmt(stmt: str) -> str | None:
    if EXPLAIN.search(stmt):
        return "plan"
    if SETTINGS.search(stmt):
        return "settings"
    return None


class Difference:
    def __init__(self, test, kind, stmt, line_off, line_on, detail):
        self.test = test
        self.kind = kind
        self.stmt = stmt
        self.line_off = line_off
        self.line_on = line_on
        self.detail = detail


def udiff(a: list[str], b: list[str], limit: int = 40) -> list[str]:
    d = list(difflib.unified_diff(a, b, "off", "on", lineterm="", n=1))
    if len(d) > limit:
        d = [*d[:limit], f"... ({len(d) - limit} more diff lines)"]
    return d


def compare_test(test: str, off_path: str, on_path: str, stats) -> list[Difference]:
    with open(off_path, "rb") as f1, open(on_path, "rb") as f2:
        if f1.read() == f2.read():
            stats["identical"] += 1
            return []
    a = parse(off_path)
    b = parse(on_path)
    diffs: list[Difference] = []
    sm = difflib.SequenceMatcher(None, [x.key() for x in a], [x.key() for x in b], autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            for x, y in zip(a[i1:i2], b[j1:j2], strict=True):
                if not isinstance(x, Table):
                    continue
                stats["tables"] += 1
                if x.rows == y.rows and x.footer == y.footer:
                    continue
                kind = classify_stmt(x.stmt)
                if kind is None:
                    same_multiset = (
                        x.footer == y.footer
                        and collections.Counter(x.rows) == collections.Counter(y.rows)
                    )
                    if same_multiset and not ORDER_BY.search(x.stmt):
                        stats["reordered"] += 1
                        continue
                    kind = "order" if same_multiset else "result"
                diffs.append(
                    Difference(test, kind, x.stmt, x.start, y.start, udiff(x.lines(), y.lines()))
                )
            continue
        # lines or tables present in one run only, or different lines
        ctx_item = a[i1] if i1 < i2 else (b[j1] if j1 < j2 else None)
        stmt = ctx_item.stmt if ctx_item is not None else ""
        kinds = {classify_stmt(x.stmt) for x in a[i1:i2] + b[j1:j2]}
        kind = kinds.pop() if len(kinds) == 1 and None not in kinds else "message"
        la = [line for x in a[i1:i2] for line in x.lines()]
        lb = [line for x in b[j1:j2] for line in x.lines()]
        start_a = a[i1].start if i1 < i2 else (a[i1 - 1].start if i1 else 0)
        start_b = b[j1].start if j1 < j2 else (b[j1 - 1].start if j1 else 0)
        diffs.append(Difference(test, kind, stmt, start_a, start_b, udiff(la, lb)))
    return diffs


class Entry:
    def __init__(self, test, kind, pattern, reason, lineno):
        self.test = test
        self.kind = kind
        self.pattern = pattern
        self.reason = reason
        self.lineno = lineno
        self.used = 0

    def matches(self, d: Difference) -> bool:
        if self.test != d.test or self.kind != d.kind:
            return False
        return self.pattern == "*" or self.pattern.lower() in d.stmt.lower()


def load_entries(path: str | None) -> list[Entry]:
    entries: list[Entry] = []
    if not path or not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split("|", 3)]
            if len(parts) != 4 or not parts[3]:
                sys.exit(f"{path}:{lineno}: expected 'test | kind | pattern | reason'")
            if parts[1] not in ("plan", "settings", "order", "result", "message", "missing"):
                sys.exit(f"{path}:{lineno}: unknown kind {parts[1]!r}")
            entries.append(Entry(parts[0], parts[1], " ".join(parts[2].split()), parts[3], lineno))
    return entries


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("off")
    ap.add_argument("on")
    ap.add_argument("--expected-differences")
    ap.add_argument("--report")
    args = ap.parse_args()

    entries = load_entries(args.expected_differences)
    tests_off = {f[:-4] for f in os.listdir(args.off) if f.endswith(".out")}
    tests_on = {f[:-4] for f in os.listdir(args.on) if f.endswith(".out")}
    stats: collections.Counter[str] = collections.Counter()
    diffs: list[Difference] = []
    for test in sorted(tests_off | tests_on):
        if test not in tests_off or test not in tests_on:
            diffs.append(Difference(test, "missing", "", 0, 0, ["output in one run only"]))
            continue
        stats["tests"] += 1
        diffs.extend(
            compare_test(test, os.path.join(args.off, test + ".out"),
                         os.path.join(args.on, test + ".out"), stats)
        )

    unexpected: list[Difference] = []
    by_kind: collections.Counter[str] = collections.Counter()
    for d in diffs:
        hit = next((e for e in entries if e.matches(d)), None)
        if hit is None:
            unexpected.append(d)
        else:
            hit.used += 1
            by_kind[d.kind] += 1
    stale = [e for e in entries if not e.used]

    out = []
    out.append(
        f"compared {stats['tests']} tests ({stats['identical']} identical), "
        f"{stats['tables']} result tables in the others; "
        f"{stats['reordered']} tables equal up to row order (no ORDER BY); "
        f"{len(diffs)} differences, {len(diffs) - len(unexpected)} reviewed "
        f"({', '.join(f'{k} {v}' for k, v in sorted(by_kind.items())) or 'none'}), "
        f"{len(unexpected)} unexpected"
    )
    for d in diffs:
        tag = "UNEXPECTED" if d in unexpected else "reviewed"
        out.append("")
        out.append(f"[{tag}] {d.test} {d.kind} (off line {d.line_off}, on line {d.line_on})")
        out.append(f"  statement: {d.stmt[:300]}")
        out.extend("  " + line for line in d.detail)
    for e in stale:
        out.append(f"stale entry (matched nothing), line {e.lineno}: "
                   f"{e.test} | {e.kind} | {e.pattern}")
    text = "\n".join(out) + "\n"
    if args.report:
        with open(args.report, "w", encoding="utf-8") as f:
            f.write(text)
    # the terminal gets the summary and the unexpected differences
    print("pgregress: " + out[0])
    for d in unexpected:
        print(f"  UNEXPECTED {d.test} {d.kind} (off line {d.line_off}, "
              f"on line {d.line_on}): {d.stmt[:200]}")
        for line in d.detail[:20]:
            print("    " + line)
    if stale:
        print(f"  {len(stale)} entries of the list matched nothing (listed in the report)")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
