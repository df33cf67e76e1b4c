"""Concurrent load on eddies: pgbench clients running a mix of eddy queries.

    python -m eddytools.load --dsn "host=... port=... dbname=..." \\
        --seconds 600 --clients 8 --server-log /path/to/server.log

Half of the clients use the extended protocol with prepared statements
(``pgbench -M prepared``), half the simple protocol (``-M simple``); both
pgbench processes run at the same time against the same tables.  Every
transaction picks one of these scripts (weights in ``SCRIPTS``):

  sel     a selection eddy (two delay() predicates routed, md5 on the scan),
          under a routing policy and reoptimization frequency drawn per
          transaction
  join3   a 3-way join eddy with the join method PostgreSQL chooses
          (index joins into the unique2 indexes)
  hash4   a 4-way star join eddy of symmetric hash joins plus a routed
          selection, under a drawn policy
  index3  a 3-way path join eddy with every join an index join
  proj    a projecting 2-way join eddy under ORDER BY ... LIMIT

Every query's answer is checked inside the transaction: ``load_check``
compares it with the answer PostgreSQL gave with ``eddy.enabled = off``
(computed at setup for every parameter value) and raises an error on a
mismatch, so a wrong answer aborts its pgbench client like any other error.

While pgbench runs, every backend's private memory (RssAnon of
/proc/<pid>/status, which excludes shared buffers) is sampled, and
``pg_log_backend_memory_contexts`` makes each backend log its memory context
totals; at the end the server log is checked for crashes and assertion
failures.  The server must run on this machine and its backends' /proc
entries must be readable (same OS user, or root).

Exit status: 0 when every client finished without error, no crash is in the
log and memory growth stayed within --max-growth-mb; 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psycopg

from eddytools.db import connect, eddy_nodes, ensure_eddy, explain_json, sql_value
from spark_loader import wisconsin

ROWS = 10_000
KEYS = 50                        # parameter :a ranges over 0 .. KEYS-1
POLICIES = ("rank", "lottery", "fixed", "random", "cumulative")
FREQS = ("1", "10", "100", "1000")

# name -> (weight, eddy settings for the EXPLAIN check, query with :a)
QUERIES: dict[str, tuple[int, dict[str, str], str]] = {
    "sel": (4, {}, """SELECT count(*) FROM lw1
        WHERE delay(ten, 0) < 7 AND delay(hundred, 0) <> :a AND md5(stringu1) > '3'"""),
    "join3": (2, {}, """SELECT count(*) FROM lw1
        JOIN lw2 ON lw2.unique2 = lw1.unique2
        JOIN lw3 ON lw3.unique2 = lw2.unique1
        WHERE lw1.hundred = :a"""),
    "hash4": (1, {"eddy.join_method": "hash"}, """SELECT count(*) FROM lw1
        JOIN lw2 ON lw2.unique2 = lw1.unique2
        JOIN lw3 ON lw3.unique2 = lw1.unique2
        JOIN lw4 ON lw4.unique2 = lw1.unique2
        WHERE lw1.ten = :a % 10 AND delay(lw2.four, 0) <> 3 AND lw3.two + lw4.four < 3"""),
    "index3": (2, {"eddy.join_method": "index"}, """SELECT count(*) FROM lw1
        JOIN lw2 ON lw2.unique2 = lw1.unique1
        JOIN lw3 ON lw3.unique2 = lw2.unique1
        WHERE lw1.unique2 BETWEEN :a * 100 AND :a * 100 + 300"""),
    "proj": (1, {}, """SELECT sum(x) FROM (
        SELECT lw1.unique1 * 3 + lw2.four AS x FROM lw1
        JOIN lw2 ON lw2.unique2 = lw1.unique1
        WHERE lw1.hundred < :a + 10 AND delay(lw2.ten, 0) > 1
        ORDER BY lw1.unique1 DESC, lw2.four LIMIT 50) s"""),
}



def _wisconsin_sql(k: int, prime: int) -> str:
    """Wisconsin-like table lw<k> (``spark_loader.wisconsin``'s formulas over
    the row number) with a unique index on unique2."""
    items = [f"{wisconsin.multiplicative_permutation_sql('g', ROWS, prime)} AS unique1",
             "g AS unique2",
             *wisconsin.attributes_sql("g", ("two", "four", "ten", "hundred")),
             f"{wisconsin.compact_string_sql('g', 2, 53)} AS stringu1"]
    return f"""
CREATE TABLE lw{k} AS
SELECT {", ".join(items)}
FROM generate_series(0, {ROWS - 1}) g;
CREATE UNIQUE INDEX ON lw{k} (unique2);
ANALYZE lw{k};"""


SETUP_SQL = f"""
DROP TABLE IF EXISTS lw1, lw2, lw3, lw4, load_expect;
{"".join(_wisconsin_sql(k, p) for k, p in zip(range(1, 5), (7, 13, 17, 19), strict=True))}
CREATE TABLE load_expect (q text, a int, answer numeric, PRIMARY KEY (q, a));
CREATE OR REPLACE FUNCTION load_check(q text, a int, got numeric) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE want numeric;
BEGIN
    SELECT e.answer INTO STRICT want FROM load_expect e WHERE e.q = $1 AND e.a = $2;
    IF got IS DISTINCT FROM want THEN
        RAISE EXCEPTION 'eddy load: % (a = %) returned %, PostgreSQL returned %', q, a, got, want
            USING ERRCODE = 'data_exception';
    END IF;
    RETURN 1;
END $$;
"""


def substitute(query: str, a: int) -> str:
    """``query`` with its parameter :a replaced by ``a``."""
    return query.replace(":a", str(a))


def pgbench_script(name: str) -> str:
    """The pgbench script of query ``name``: draw the parameters, choose the
    routing settings, run the checked query."""
    _, settings, query = QUERIES[name]
    lines = [
        f"\\set a random(0, {KEYS - 1})",
        f"\\set p random(1, {len(POLICIES)})",
        f"\\set f random(1, {len(FREQS)})",
        "SELECT set_config('eddy.routing_policy', (ARRAY["
        + ",".join(f"'{p}'" for p in POLICIES) + "])[:p], false),"
        " set_config('eddy.reopt_frequency', (ARRAY["
        + ",".join(f"'{f}'" for f in FREQS) + "])[:f], false),"
        " set_config('eddy.join_method', '"
        + settings.get("eddy.join_method", "auto") + "', false);",
        # a pgbench command is one line
        f"SELECT load_check('{name}', :a, ({' '.join(query.split())}));",
    ]
    return "\n".join(lines) + "\n"


def setup(dsn: str) -> None:
    """Tables, the checking function, PostgreSQL's answers for every
    parameter value; and a check that every query gets an eddy."""
    with connect(dsn) as conn:
        ensure_eddy(conn)
        # delay() is declared very expensive, which would JIT-compile every
        # query: minutes of CPU for nothing on a shared machine
        conn.execute(f"ALTER DATABASE {conn.info.dbname} SET jit = off")
        conn.execute("SET jit = off")
        conn.execute(SETUP_SQL)
        conn.execute("SET eddy.enabled = off")
        with conn.cursor() as cur:
            for name, (_, _, query) in QUERIES.items():
                for a in range(KEYS):
                    answer = sql_value(cur, substitute(query, a))
                    cur.execute("INSERT INTO load_expect VALUES (%s, %s, %s)",
                                (name, a, answer))
        conn.execute("SET eddy.enabled = on")
        for name, (_, settings, query) in QUERIES.items():
            conn.execute(f"SET eddy.join_method = '{settings.get('eddy.join_method', 'auto')}'")
            checked = f"SELECT load_check('{name}', 7, ({substitute(query, 7)}))"
            if not eddy_nodes(explain_json(conn, checked)):
                raise RuntimeError(f"load query {name} gets no eddy:\n{checked}")
        conn.execute("VACUUM ANALYZE load_expect")


@dataclass
class PgbenchResult:
    mode: str
    clients: int
    returncode: int
    transactions: int | None
    failed: int | None
    tps: float | None
    aborted_clients: int
    stderr_tail: str

    @property
    def ok(self) -> bool:
        return (self.returncode == 0 and self.aborted_clients == 0
                and not self.failed and bool(self.transactions))


def _parse_pgbench(mode: str, clients: int, proc: subprocess.CompletedProcess) -> PgbenchResult:
    out = proc.stdout
    m = re.search(r"number of transactions actually processed: (\d+)", out)
    f = re.search(r"number of failed transactions: (\d+)", out)
    t = re.search(r"tps = ([\d.]+) \(without initial connection time\)", out)
    aborted = len(re.findall(r"client \d+ aborted", proc.stderr))
    return PgbenchResult(mode, clients, proc.returncode,
                         int(m.group(1)) if m else None, int(f.group(1)) if f else None,
                         float(t.group(1)) if t else None, aborted,
                         "\n".join(proc.stderr.splitlines()[-15:]))


@dataclass
class Sample:
    t: float
    rss_anon_kb: dict[int, int]


@dataclass
class LoadReport:
    seconds: float
    clients: int
    pgbench: list[PgbenchResult]
    samples: list[Sample]
    context_totals: dict[int, list[int]]     # pid -> Grand totals logged, in order
    crash_lines: list[str]
    max_growth_mb: float
    errors: list[str] = field(default_factory=list)

    @property
    def transactions(self) -> int:
        return sum(r.transactions or 0 for r in self.pgbench)

    def rss_first_last(self) -> dict[int, tuple[int, int]]:
        """Per backend: RssAnon (kB) at the first sample after warm-up and
        at the last sample."""
        if not self.samples:
            return {}
        warm = [s for s in self.samples if s.t >= _warm_up(self.seconds)] or self.samples
        out: dict[int, tuple[int, int]] = {}
        for pid in warm[0].rss_anon_kb:
            seen = [s.rss_anon_kb[pid] for s in warm if pid in s.rss_anon_kb]
            out[pid] = (seen[0], seen[-1])
        return out

    def max_growth_kb(self) -> int:
        pairs = self.rss_first_last()
        return max((last - first for first, last in pairs.values()), default=0)

    @property
    def ok(self) -> bool:
        return (all(r.ok for r in self.pgbench) and not self.crash_lines and not self.errors
                and len(self.rss_first_last()) == self.clients
                and self.max_growth_kb() <= self.max_growth_mb * 1024)

    def summary(self) -> str:
        lines = [f"load: {self.clients} clients for {self.seconds:.0f} s"]
        for r in self.pgbench:
            lines.append(f"  -M {r.mode}: {r.clients} clients, {r.transactions} transactions, "
                         f"tps {r.tps}, failed {r.failed}, aborted clients {r.aborted_clients}, "
                         f"exit {r.returncode}")
            if not r.ok:
                lines.append("    " + r.stderr_tail.replace("\n", "\n    "))
        lines.append(f"  total transactions: {self.transactions}")
        for pid, (first, last) in sorted(self.rss_first_last().items()):
            totals = self.context_totals.get(pid, [])
            ctx = (f", memory contexts {totals[0] // 1024} kB -> {totals[-1] // 1024} kB"
                   f" ({len(totals)} dumps)" if totals else "")
            lines.append(f"  backend {pid}: RssAnon {first} kB -> {last} kB "
                         f"({last - first:+d} kB){ctx}")
        lines.append(f"  largest RssAnon growth: {self.max_growth_kb()} kB "
                     f"(bound {self.max_growth_mb:.0f} MB)")
        lines.append(f"  crash lines in server log: {len(self.crash_lines)}")
        lines.extend("    " + c for c in self.crash_lines[:20])
        lines.extend(f"  error: {e}" for e in self.errors)
        lines.append("  OK" if self.ok else "  FAILED")
        return "\n".join(lines)


def _warm_up(seconds: float) -> float:
    """Seconds after which a backend's caches are warm: memory is compared
    from then on."""
    return min(30.0, seconds * 0.2)


CRASH_RE = re.compile(r"terminated by signal|was terminated by exception|TRAP:|PANIC:|"
                      r"server process .* exited with exit code [^0]|"
                      r"terminating any other active server processes")


def _rss_anon_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _pgbench_env(dsn: str) -> dict[str, str]:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    env = dict(os.environ)
    for key, var in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER"),
                     ("dbname", "PGDATABASE"), ("password", "PGPASSWORD")):
        if info.get(key) is not None:
            env[var] = str(info[key])
    return env


def run(dsn: str, *, seconds: int, clients: int = 8, server_log: str | None = None,
        pgbench: str = "pgbench", sample_every: float = 5.0, dump_every: float = 60.0,
        max_growth_mb: float = 16.0, do_setup: bool = True) -> LoadReport:
    """Set up (unless told not to), run the load, and report."""
    if clients < 2:
        raise ValueError("at least 2 clients: half prepared, half simple protocol")
    if do_setup:
        setup(dsn)
    log_start = os.path.getsize(server_log) if server_log and os.path.exists(server_log) else 0
    env = _pgbench_env(dsn)
    dbname = psycopg.conninfo.conninfo_to_dict(dsn).get("dbname") or env.get("PGDATABASE")
    halves = [("prepared", clients // 2), ("simple", clients - clients // 2)]
    results: list[PgbenchResult] = []
    samples: list[Sample] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="eddy-load-") as tmp:
        os.chmod(tmp, 0o755)
        files = []
        for name, (weight, _, _) in QUERIES.items():
            path = Path(tmp) / f"{name}.sql"
            path.write_text(pgbench_script(name))
            files += ["-f", f"{path}@{weight}"]
        procs = []
        outputs: dict[str, subprocess.CompletedProcess] = {}

        def go(mode: str, n: int) -> None:
            cmd = [pgbench, "-n", "-c", str(n), "-j", "1", "-T", str(seconds),
                   "-M", mode, *files]
            outputs[mode] = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                           timeout=seconds + 300)

        for mode, n in halves:
            th = threading.Thread(target=go, args=(mode, n))
            th.start()
            procs.append(th)

        start = time.monotonic()
        pids: list[int] = []
        with connect(dsn) as mon:
            while time.monotonic() - start < 30 and len(pids) < clients:
                pids = [r[0] for r in mon.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench' "
                    "AND datname = %s ORDER BY pid", (dbname,)).fetchall()]
                time.sleep(0.2)
            if len(pids) != clients:
                errors.append(f"{len(pids)} pgbench backends seen, {clients} expected")
            warm = _warm_up(seconds)
            next_dump = warm
            while any(p.is_alive() for p in procs):
                t = time.monotonic() - start
                if t > seconds - 1:
                    break
                rss = {pid: v for pid in pids if (v := _rss_anon_kb(pid)) is not None}
                samples.append(Sample(t, rss))
                if t >= next_dump and server_log:
                    for pid in pids:
                        mon.execute("SELECT pg_log_backend_memory_contexts(%s)", (pid,))
                    next_dump = t + dump_every
                time.sleep(min(sample_every, max(0.1, seconds - 1 - t)))
            # the last memory-context dump, just before the end
            if server_log:
                for pid in pids:
                    mon.execute("SELECT pg_log_backend_memory_contexts(%s)", (pid,))
        for th in procs:
            th.join()
        for mode, n in halves:
            if mode in outputs:
                results.append(_parse_pgbench(mode, n, outputs[mode]))
            else:
                errors.append(f"pgbench -M {mode} did not finish")

    crash_lines: list[str] = []
    totals: dict[int, list[int]] = {}
    if server_log:
        time.sleep(1)
        with open(server_log, errors="replace") as f:
            f.seek(log_start)
            text = f.read()
        for line in text.splitlines():
            if CRASH_RE.search(line):
                crash_lines.append(line)
            m = re.search(r"\[(\d+)\].*Grand total: (\d+) bytes", line)
            if m and int(m.group(1)) in pids:
                totals.setdefault(int(m.group(1)), []).append(int(m.group(2)))
    return LoadReport(float(seconds), clients, results, samples, totals, crash_lines,
                      max_growth_mb, errors)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--server-log", help="the server's log file (crash check, memory dumps)")
    ap.add_argument("--pgbench", default=os.path.join(
        os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin"), "pgbench"))
    ap.add_argument("--max-growth-mb", type=float, default=16.0,
                    help="largest allowed RssAnon growth of a backend after warm-up")
    ap.add_argument("--json", help="write the report as JSON to this file")
    args = ap.parse_args(argv)
    report = run(args.dsn, seconds=args.seconds, clients=args.clients,
                 server_log=args.server_log, pgbench=args.pgbench,
                 max_growth_mb=args.max_growth_mb)
    print(report.summary())
    if args.json:
        data = asdict(report)
        data["rss_first_last"] = {str(k): v for k, v in report.rss_first_last().items()}
        Path(args.json).write_text(json.dumps(data, indent=1, default=str))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
