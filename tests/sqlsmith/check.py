#!/usr/bin/env python3
"""tests/sqlsmith/check.py: verdict on a sqlsmith run (called by tests/sqlsmith/run.sh).

Reads the server log from --offset (the byte where the sqlsmith run began;
log_line_prefix = '%m [%p] %e %a: ', so each entry carries its SQLSTATE) and

  - fails on a crash or an assertion failure: "TRAP:", "PANIC", "terminated
    by signal" / "terminated by exception" (the statement a crashed backend
    was running is taken from the postmaster's DETAIL line);
  - fails on an ERROR of SQLSTATE XX000 or whose message mentions eddy, unless
    the statement, run again with eddy.enabled = off, raises the same error
    (same SQLSTATE, same message once numbers are masked): then PostgreSQL
    raises it too and it is listed as PostgreSQL's own;
  - counts every other error by SQLSTATE (sqlsmith's queries fail in
    PostgreSQL alone most of the time).

It also EXPLAINs the statements in --queries (the first ones sqlsmith
generated) under the run's settings and counts the plans with an Eddy, and
reads sqlsmith's own log (--verbose: one character per query, then
"queries: N").  Standard library only; statements are run with psql.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys

ENTRY = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \S+) \[(?P<pid>\d+)\] "
    r"(?P<state>[0-9A-Z]{5}) (?P<app>.*?): "
    r"(?P<level>DEBUG\d?|LOG|INFO|NOTICE|WARNING|ERROR|FATAL|PANIC|DETAIL|HINT|"
    r"CONTEXT|STATEMENT|QUERY|LOCATION):  (?P<msg>.*)$")
CRASH = re.compile(r"terminated by signal|terminated by exception|was terminated")
PSQL_ERROR = re.compile(r"^(?:psql:[^\n]*?)?ERROR:  (?:(?P<state>[0-9A-Z]{5}): )?(?P<msg>.*)$",
                        re.M)
EDDY = re.compile(r"\beddy", re.I)
RERUNS_PER_MESSAGE = 5
# Re-runs with eddy.enabled = off of a statement whose error came back
# neither with eddies off nor on (not deterministic: TABLESAMPLE without
# REPEATABLE samples other blocks each time, random())
NONDETERMINISTIC_RERUNS = 20
# The documented limit of join state, until eddies spill to disk (issue #13):
# listed with the statements that hit it, not a failure.


def normalise(msg: str) -> str:
    return re.sub(r"\d+", "N", msg.strip())


def suspect(e: dict) -> bool:
    """An ERROR the extension may have raised in one of sqlsmith's sessions
    (application_name sqlsmith::dut; not a re-run of check.py's own)."""
    return e["level"] == "ERROR" and e["app"].startswith("sqlsmith") and (
        e["state"] == "XX000" or bool(EDDY.search(e["msg"])))


def keep(e: dict) -> bool:
    return suspect(e) or e["level"] == "PANIC" or (
        e["level"] == "LOG" and "server process" in e["msg"] and bool(CRASH.search(e["msg"])))


class Log:
    """The server log from offset, streamed (a long run writes hundreds of
    megabytes): ERRORs counted by SQLSTATE and message, and only the entries
    check.py looks at kept (suspect ERRORs, PANICs, crashes, with their
    STATEMENT/DETAIL lines), plus the TRAP lines (assertion failures go to
    stderr, without a prefix).  A STATEMENT, DETAIL, ... line belongs to the
    last entry of its process; a line that does not start an entry continues
    the previous one."""

    def __init__(self, path: str, offset: int):
        self.by_state: collections.Counter = collections.Counter()
        self.by_msg: collections.Counter = collections.Counter()
        self.errors = 0
        self.kept: list[dict] = []
        self.traps: list[str] = []
        last: dict[str, dict] = {}
        cur: tuple[dict, str] | None = None       # (dict, key) continuation lines go to
        with open(path, "rb") as f:
            f.seek(offset)
            for raw in f:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                m = ENTRY.match(line)
                if not m:
                    if line.startswith("TRAP:"):
                        self.traps.append(line.strip())
                    elif cur is not None:
                        cur[0][cur[1]] += "\n" + line
                    continue
                level, pid = m["level"], m["pid"]
                if level in ("STATEMENT", "DETAIL", "HINT", "CONTEXT", "QUERY", "LOCATION"):
                    target = last.get(pid)
                    if target is None:
                        cur = None
                    elif level == "STATEMENT":
                        target["statement"] = m["msg"]
                        cur = (target, "statement")
                    else:
                        d = {"level": level, "msg": m["msg"]}
                        target["details"].append(d)
                        cur = (d, "msg")
                    continue
                msg = m["msg"]
                if msg.startswith(m["state"] + ": "):   # log_error_verbosity = verbose
                    msg = msg[7:]
                e: dict = {"pid": pid, "state": m["state"], "app": m["app"], "level": level,
                           "msg": msg, "statement": None, "details": []}
                if level == "ERROR":
                    self.errors += 1
                    self.by_state[m["state"]] += 1
                    self.by_msg[(m["state"], msg[:100])] += 1
                if keep(e):
                    self.kept.append(e)
                    last[pid] = e
                    cur = (e, "msg")
                else:
                    # its STATEMENT and continuation lines are not needed
                    last[pid] = {"statement": None, "details": [], "msg": ""}
                    cur = None


def run_psql(psql: str, dsn: str, sql: str, timeout: float = 120) -> tuple[int, str, str]:
    try:
        p = subprocess.run([psql, "-X", "-q", "-At", "-d", dsn, "-o", "/dev/null", "-f", "-"],
                           input=sql, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return -1, "", "psql timed out"


def same_error(result: dict, state: str, msg: str) -> bool:
    """Did a re-run (rerun) raise the error of SQLSTATE state and message msg
    (normalised)?"""
    return result.get("state") == state and normalise(result.get("message", "")) == msg


def rerun(psql: str, dsn: str, statement: str, eddy: bool) -> dict:
    """The statement once more, in a transaction rolled back, with eddies as
    in the run (the role's settings) or off."""
    sql = ("\\set VERBOSITY verbose\n"
           "SET statement_timeout = '20s';\n"
           + ("" if eddy else "SET eddy.enabled = off;\n")
           + "BEGIN;\n" + statement.rstrip().rstrip(";") + "\n;\nROLLBACK;\n")
    rc, _, err = run_psql(psql, dsn, sql)
    m = PSQL_ERROR.search(err)
    out: dict[str, object] = {"psql_exit": rc}
    if m:
        out["state"] = m["state"] or "?????"
        out["message"] = m["msg"].strip()
    elif rc != 0:
        out["state"] = "lost"
        out["message"] = err.strip()[-500:]
    else:
        out["state"] = "00000"
    return out


def explain_sample(psql: str, dsn: str, path: str) -> dict:
    statements: list[str] = []
    buf: list[str] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                buf.append(line)
                if line.rstrip("\n").endswith(";"):
                    statements.append("".join(buf).rstrip().rstrip(";"))
                    buf = []
    except FileNotFoundError:
        pass
    if not statements:
        return {"explained": 0, "planned": 0, "with_eddy": 0}
    parts = ["SET statement_timeout = '10s';"]
    for i, s in enumerate(statements):
        parts.append(f"\\echo @@Q {i}\nEXPLAIN (COSTS OFF)\n{s}\n;")
    sql = "\n".join(parts) + "\n"
    try:
        p = subprocess.run([psql, "-X", "-q", "-At", "-d", dsn, "-f", "-"], input=sql,
                           capture_output=True, text=True, timeout=600)
        out = p.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
    planned = with_eddy = 0
    lines: list[str] | None = None
    blocks: list[list[str]] = []
    for line in out.splitlines():
        if line.startswith("@@Q "):
            lines = []
            blocks.append(lines)
        elif lines is not None:
            lines.append(line)
    for b in blocks:
        if b:
            planned += 1
            if any("Custom Scan (Eddy)" in x for x in b):
                with_eddy += 1
    return {"explained": len(statements), "planned": planned, "with_eddy": with_eddy}


def sqlsmith_counts(path: str) -> dict:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    chars = collections.Counter("".join(
        ln for ln in text.splitlines() if re.fullmatch(r"[.a-zA-Z]+", ln)
        and not ln.startswith("queries") and set(ln) <= set(".eStCc")))
    m = re.findall(r"^queries: (\d+)", text, re.M)
    return {"queries": int(m[-1]) if m else sum(chars.values()),
            "ok": chars.get(".", 0), "error": chars.get("e", 0),
            "syntax_error": chars.get("S", 0), "timeout": chars.get("t", 0),
            "broken": chars.get("C", 0) + chars.get("c", 0)}


def classify(s: dict, ext_files: set[str], psql: str, dsn: str) -> str:
    """An XX000 that eddy.enabled = off does not raise: the extension's, unless
    PostgreSQL raised it in a function the statement calls by name (LOCATION
    names the C function; pg_proc its SQL name) from a file of PostgreSQL's,
    for a message that does not mention eddy: such a function (sqlsmith calls
    test_fdw_handler(), intervaltypmodout(random int), ...) raises for its
    arguments whoever calls it, and an eddy evaluates it where PostgreSQL's
    plan never does (an eddy reads all its sources, where PostgreSQL may stop
    at a one-time filter that is false, an empty relation or a LIMIT): the
    case the differential fuzzer also counts without failing (README,
    Randomized differential testing)."""
    if EDDY.search(s["message"]):
        return "extension"
    loc = next((d["msg"] for d in s.get("details", []) if d["level"] == "LOCATION"), "")
    m = re.match(r"\s*(\w+), ([\w.-]+):\d+", loc)
    s["location"] = loc
    if not m or m[2] in ext_files:
        return "extension"
    cfunc = m[1]
    _, out, _ = run_psql_out(psql, dsn, "SELECT DISTINCT proname FROM pg_proc WHERE prosrc = "
                              f"'{cfunc}' OR proname = '{cfunc}';\n")
    names = [n.strip() for n in out.splitlines() if n.strip()]
    text = (s["statement"] or "").lower()
    for n in names:
        if re.search(r"\b" + re.escape(n.lower()) + r"\s*\(", text):
            s["function"] = n
            return "evaluated"
    return "extension"


def run_psql_out(psql: str, dsn: str, sql: str) -> tuple[int, str, str]:
    p = subprocess.run([psql, "-X", "-q", "-At", "-d", dsn, "-f", "-"], input=sql,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", required=True)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--sqlsmith-log")
    ap.add_argument("--queries", help="the first generated statements, for the EXPLAIN sample")
    ap.add_argument("--psql", default="psql")
    ap.add_argument("--dsn", required=True, help="conninfo of the run's role and database")
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--seed", default="")
    ap.add_argument("--extension-src", help="the extension's C sources: an error raised there"
                    " is the extension's")
    ap.add_argument("--report")
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    log = Log(args.log, args.offset)
    by_state, by_msg = log.by_state, log.by_msg

    crashes = []
    for e in log.kept:
        if e["level"] == "PANIC":
            crashes.append({"what": "PANIC: " + e["msg"][:300], "statement": e["statement"]})
        elif e["level"] == "LOG":
            stmt = None
            for d in e["details"]:
                if d["level"] == "DETAIL" and d["msg"].startswith("Failed process was running: "):
                    stmt = d["msg"][len("Failed process was running: "):]
            crashes.append({"what": e["msg"][:300], "statement": stmt})
    for t in log.traps:
        crashes.append({"what": t[:300], "statement": None})

    suspects: dict[str, dict] = {}
    for e in log.kept:
        if suspect(e):
            key = e["statement"] or e["msg"]
            s = suspects.setdefault(key, {"state": e["state"], "message": e["msg"][:500],
                                          "statement": e["statement"], "count": 0,
                                          "details": e["details"]})
            s["count"] += 1
    # Re-run with eddy.enabled = off: the same error there makes it
    # PostgreSQL's.  A message that recurs (a long run repeats PostgreSQL's own
    # internal errors hundreds of times) is re-run for RERUNS_PER_MESSAGE
    # statements; the others share their verdict (PostgreSQL's only if every
    # re-run one was).
    failures: list[dict] = []
    vanilla: list[dict] = []
    groups: dict[tuple, list[dict]] = collections.defaultdict(list)
    for s in suspects.values():
        groups[(s["state"], normalise(s["message"].split("\n")[0]))].append(s)
    ext_files = set()
    if args.extension_src and os.path.isdir(args.extension_src):
        ext_files = {f for f in os.listdir(args.extension_src) if f.endswith((".c", ".h"))}
    evaluated: list[dict] = []
    for (state, msg), members in groups.items():
        verdicts = []
        for s in members[:RERUNS_PER_MESSAGE]:
            if not s["statement"]:
                verdicts.append("extension")
                continue
            off = s["eddy_off"] = rerun(args.psql, args.dsn, s["statement"], eddy=False)
            if same_error(off, state, msg):
                verdicts.append("postgresql")
                continue
            again = s["eddy_on_again"] = rerun(args.psql, args.dsn, s["statement"], eddy=True)
            if not same_error(again, state, msg):
                # Not deterministic: PostgreSQL's if it raises it too, on one
                # of a few more tries with eddies off (seed 1203: an error of
                # interval() for the typmod of a row TABLESAMPLE SYSTEM drew,
                # in a plan without an eddy, 3 times in 30 with eddies off)
                found = next((k for k in range(2, NONDETERMINISTIC_RERUNS + 2)
                              if same_error(rerun(args.psql, args.dsn, s["statement"],
                                                  eddy=False), state, msg)), 0)
                if found:
                    s["verdict"] = (f"not deterministic: raised with eddy.enabled = off "
                                    f"on re-run {found}")
                    verdicts.append("postgresql")
                    continue
            verdicts.append(classify(s, ext_files, args.psql, args.dsn))
        for i, s in enumerate(members):
            if i < len(verdicts):
                v = verdicts[i]
            else:
                v = verdicts[0] if len(set(verdicts)) == 1 else "extension"
                s["verdict"] = "not re-run: as the re-run statements with this message"
            {"postgresql": vanilla, "evaluated": evaluated, "extension": failures}[v].append(s)

    for c in crashes:
        if c["statement"]:
            c["eddy_off"] = rerun(args.psql, args.dsn, c["statement"], eddy=False)

    smith = sqlsmith_counts(args.sqlsmith_log) if args.sqlsmith_log else {}
    sample = explain_sample(args.psql, args.dsn, args.queries) if args.queries else {}

    doc = {"seed": args.seed, "seconds": args.seconds, "sqlsmith": smith,
           "errors": log.errors, "errors_by_sqlstate": dict(by_state.most_common()),
           "crashes": crashes, "extension_errors": failures,
           "postgresql_internal_errors": vanilla, "evaluated_by_eddy_only": evaluated,
           "explain_sample": sample}
    lines = []
    q = smith.get("queries", "?")
    lines.append(f"sqlsmith: seed {args.seed}, {q} queries in {args.seconds}s"
                 + (f" ({smith['ok']} ok, {smith['error']} errors, {smith['syntax_error']}"
                    f" syntax errors, {smith['timeout']} timeouts, per sqlsmith)"
                    if smith.get("queries") else ""))
    lines.append(f"sqlsmith: server log: {log.errors} ERRORs: " + ", ".join(
        f"{k} {v}" for k, v in by_state.most_common()))
    for (state, msg), n in by_msg.most_common(12):
        lines.append(f"    {n:6d}  {state}  {msg}")
    if sample.get("explained"):
        pct = 100.0 * sample["with_eddy"] / sample["planned"] if sample["planned"] else 0.0
        lines.append(f"sqlsmith: EXPLAIN of the first {sample['explained']} queries:"
                     f" {sample['planned']} planned, {sample['with_eddy']} with an Eddy"
                     f" ({pct:.0f}% of the planned)")
    lines.append(f"sqlsmith: crashes/assertion failures: {len(crashes)};"
                 f" errors raised by the extension (XX000 or mentioning eddy, not raised"
                 f" with eddy.enabled = off): {len(failures)};"
                 f" statements with an XX000 PostgreSQL raises too: {len(vanilla)},"
                 f" raised by a PostgreSQL function only the eddy evaluates: {len(evaluated)}")
    for c in crashes:
        lines.append(f"  CRASH: {c['what']}")
        if c["statement"]:
            lines.append(f"    statement: {c['statement'][:2000]}")
            lines.append(f"    with eddy.enabled = off: {c['eddy_off']}")
    for s in failures:
        lines.append(f"  EXTENSION ERROR ({s['count']}x): {s['state']}: {s['message'][:300]}")
        if s["statement"]:
            lines.append(f"    statement: {s['statement'][:2000]}")
            lines.append(f"    with eddy.enabled = off: {s.get('eddy_off')}")
            lines.append(f"    again with eddy on: {s.get('eddy_on_again')}")
    ev = collections.Counter((s["state"], s["message"].split("\n")[0][:200], s.get("function"))
                             for s in evaluated)
    for (state, msg, fn), n in ev.most_common():
        lines.append(f"  PostgreSQL's own function {fn}() (raised where an eddy evaluates it and"
                     f" PostgreSQL's plan does not), {n} statements: {state}: {msg}")
    own = collections.Counter((s["state"], s["message"].split("\n")[0][:200]) for s in vanilla)
    for (state, msg), n in own.most_common():
        lines.append(f"  PostgreSQL's own (raised with eddy off too), {n} statements: "
                     f"{state}: {msg}")
    status = 1 if crashes or failures else 0
    lines.append("sqlsmith: " + ("FAILED" if status else "passed"))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.report:
        with open(args.report, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, default=str)
            f.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
