"""Instructions a query executes with the eddy on and off, under callgrind.

Wall-clock ratios on a shared 2-core machine move by 10-20% between runs of
the same build (the A/A spreads in ``docs/``); instruction counts do not.
This runs a query in a single-user backend (``postgres --single``) under
``valgrind --tool=callgrind``, once and twice in the same backend, and
reports the difference: the instructions of one warm run, without the
backend's start-up and the first run's catalog lookups.  The server of the
data directory must be stopped (single-user mode takes it over), and the
backend runs as the data directory's owner.  Parallel workers are off
(``max_parallel_workers_per_gather = 0``): callgrind follows one process.

    python -m eddytools.instructions --bindir /usr/lib/postgresql/15/bin \\
        --datadir /srv/tpch/data --dbname tpch_sf1 --tpch-query 11 \\
        --set work_mem=4MB

prints the instructions per run with ``eddy.enabled`` on and off, their
ratio, and with ``--top N`` the eddy functions whose instructions differ
most between the two.  Needs valgrind (``make valgrind`` installs it).
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from eddytools.tpch import QUERIES

TOTAL_RE = re.compile(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS")
FUNC_RE = re.compile(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*?:(\S+) \[(\S+)\]")


def parse_annotate(text: str) -> tuple[int, dict[str, int]]:
    """Program total and per-function self instructions from
    ``callgrind_annotate`` output (a function of a library named after
    the eddy is suffixed `` [eddy]``)."""
    m = TOTAL_RE.search(text)
    if m is None:
        raise ValueError("no PROGRAM TOTALS line in callgrind_annotate's output")
    funcs: dict[str, int] = {}
    for line in text.splitlines():
        f = FUNC_RE.match(line)
        if f:
            name = f.group(2) + (" [eddy]" if "eddy" in Path(f.group(3)).name else "")
            funcs[name] = funcs.get(name, 0) + int(f.group(1).replace(",", ""))
    return int(m.group(1).replace(",", "")), funcs


def run_callgrind(args: argparse.Namespace, sql: str, settings: dict[str, str],
                  times: int) -> tuple[int, dict[str, int]]:
    """Instructions of a single-user backend that applies settings and runs
    sql `times` times."""
    script = "".join(f"SET {k} = '{v}';\n\n" for k, v in settings.items())
    script += (sql.strip().rstrip(";") + ";\n\n") * times
    owner = pwd.getpwuid(os.stat(args.datadir).st_uid).pw_name
    with tempfile.TemporaryDirectory(prefix="eddy-callgrind-") as tmp:
        os.chmod(tmp, 0o777)
        out = Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               str(Path(args.bindir) / "postgres"), "--single", "-j", "-D", str(args.datadir),
               "-c", "max_parallel_workers_per_gather=0", args.dbname]
        if os.geteuid() == 0 and owner != "root":
            cmd = ["runuser", "-u", owner, "--", *cmd]
        done = subprocess.run(cmd, input=script.encode(), capture_output=True, check=False)
        if done.returncode != 0 or not out.exists():
            sys.stderr.write(done.stderr.decode(errors="replace")[-2000:])
            raise SystemExit(f"the single-user backend failed (exit {done.returncode}); "
                             "is the server of this data directory stopped?")
        annotate = subprocess.run(["callgrind_annotate", str(out)], capture_output=True,
                                  text=True, check=True).stdout
    return parse_annotate(annotate)


def per_run(args: argparse.Namespace, sql: str,
            settings: dict[str, str]) -> tuple[int, dict[str, int]]:
    """Instructions of one warm run: two runs minus one."""
    one, f1 = run_callgrind(args, sql, settings, 1)
    two, f2 = run_callgrind(args, sql, settings, 2)
    return two - one, {k: v - f1.get(k, 0) for k, v in f2.items()}


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m eddytools.instructions",
        description="Instructions of one warm run of a query with the eddy on and off, "
                    "counted by callgrind in a single-user backend (stop the server first).")
    ap.add_argument("--bindir", required=True, help="PostgreSQL's bin directory")
    ap.add_argument("--datadir", required=True, type=Path, help="the (stopped) data directory")
    ap.add_argument("--dbname", required=True)
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--tpch-query", type=int, choices=sorted(QUERIES), metavar="N",
                      help="TPC-H query N (1-22)")
    what.add_argument("--sql", help="a query")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting for both runs (repeatable); jit is off")
    ap.add_argument("--top", type=int, default=0,
                    help="list the N eddy functions with the most instructions a run")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for tool in ("valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (make valgrind installs it)")
    settings = {"jit": "off"}
    for item in args.set:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"--set {item!r}: expected NAME=VALUE")
        settings[name.strip()] = value.strip()
    sql = QUERIES[args.tpch_query].sql if args.tpch_query else args.sql
    counts = {}
    for mode in ("on", "off"):
        total, funcs = per_run(args, sql, {**settings, "eddy.enabled": mode})
        counts[mode] = total
        print(f"eddy {mode:<3}: {total / 1e6:10.1f} M instructions a run", flush=True)
        if args.top and mode == "on":
            eddy = sorted(((v, k) for k, v in funcs.items() if k.endswith("[eddy]")),
                          reverse=True)[:args.top]
            for v, k in eddy:
                print(f"    {v / 1e6:9.2f} M  {k.removesuffix(' [eddy]')}")
    print(f"on / off: {counts['on'] / counts['off']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
