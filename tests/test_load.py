"""Concurrent load (short form of `make load`): 8 pgbench sessions, half
with prepared statements and half with the simple protocol, run checked
eddy queries (selection eddies, hash and index join eddies, every routing
policy, reoptimization frequencies 1-1000) for 45 seconds; see
python/eddytools/load.py.  Every answer is compared with PostgreSQL's inside
the transaction, so a wrong answer fails its client like an error."""

from __future__ import annotations

import os

from eddytools.load import run

SECONDS = 45
CLIENTS = 8


def test_concurrent_eddy_load(pg_dsn, postgresql_proc):
    """No failed transaction or aborted client, thousands of transactions
    in each protocol, no crash or assertion failure in the server log, and
    no backend whose private memory grows by more than 8 MB after warm-up."""
    pgbench = os.path.join(os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin"), "pgbench")
    report = run(pg_dsn, seconds=SECONDS, clients=CLIENTS, server_log=postgresql_proc.logfile,
                 pgbench=pgbench, sample_every=3.0, dump_every=20.0, max_growth_mb=8.0)
    print(report.summary())
    assert not report.errors, report.summary()
    assert not report.crash_lines, report.summary()
    assert len(report.pgbench) == 2
    for r in report.pgbench:
        assert r.returncode == 0 and r.aborted_clients == 0 and r.failed == 0, report.summary()
        assert r.transactions and r.transactions >= 500, report.summary()
    pairs = report.rss_first_last()
    assert len(pairs) == CLIENTS, report.summary()
    assert report.max_growth_kb() <= 8 * 1024, report.summary()
    # every backend's memory-context totals were logged at least twice
    assert len(report.context_totals) == CLIENTS
    assert all(len(v) >= 2 for v in report.context_totals.values()), report.context_totals
    assert report.ok
