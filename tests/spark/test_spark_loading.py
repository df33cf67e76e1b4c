"""Loading behaviour: idempotency, atomic replacement, failures, refusals, clear errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from spark_loader.cli import main
from spark_loader.errors import ConflictError, LoadFailed

from .helpers import by_name, rows, scalar

REPO = Path(__file__).resolve().parents[2]
SMALL = ("wisconsin", "--rows", "4000", "--tables", "w1", "w2", "--tuple-width", "80")


def oid(dsn: str, table: str) -> int | None:
    return scalar(dsn, "SELECT to_regclass(%s)::oid::bigint", (table,))


def content_md5(dsn: str, table: str) -> str:
    return scalar(dsn, f"SELECT md5(string_agg(t::text, ',' ORDER BY unique2)) FROM {table} t")


def leftovers(dsn: str) -> list[tuple]:
    return rows(dsn, "SELECT relname FROM pg_class WHERE relname LIKE '%%\\_\\_sl\\_%%'")


def test_rerun_is_idempotent_and_force_reloads(pg_dsn, load):
    """Re-running with the same parameters changes nothing (same tables, no Spark job);
    --force reloads them (new tables, same content); other parameters replace them
    without --force."""
    first = by_name(load(pg_dsn, *SMALL))
    oids = {t: oid(pg_dsn, t) for t in ("w1", "w2")}
    again = load(pg_dsn, *SMALL)
    assert [(t.name, t.status, t.rows, t.checksum) for t in again.tables] == [
        (t.name, "unchanged", t.rows, t.checksum) for t in first.values()]
    assert "load" not in again.timings
    assert {t: oid(pg_dsn, t) for t in oids} == oids

    forced = by_name(load(pg_dsn, *SMALL, "--force"))
    assert all(t.status == "loaded" for t in forced.values())
    assert all(oid(pg_dsn, t) != oids[t] for t in oids)
    assert {t: r.checksum for t, r in forced.items()} == {t: r.checksum for t, r in first.items()}

    reseeded = by_name(load(pg_dsn, *SMALL, "--seed", "9"))
    assert all(t.status == "loaded" for t in reseeded.values())
    assert reseeded["w1"].checksum != first["w1"].checksum
    assert leftovers(pg_dsn) == []


def test_failed_load_leaves_previous_table(pg_dsn, load):
    """A load that fails midway (a task dies after writing part of its rows) leaves the
    previous table exactly as it was, drops its staging tables and says what failed."""
    load(pg_dsn, "wisconsin", "--rows", "4000", "--tables", "w1")
    before = (oid(pg_dsn, "w1"), content_md5(pg_dsn, "w1"))
    with pytest.raises(LoadFailed) as failure:
        load(pg_dsn, "wisconsin", "--rows", "4000", "--tables", "w1", "--seed", "5",
             "--part-size", "0.1", "--inject-failure", "w1:3")
    message = str(failure.value)
    assert "injected failure in w1 part 3" in message
    assert "left as they were: w1" in message
    assert (oid(pg_dsn, "w1"), content_md5(pg_dsn, "w1")) == before
    assert leftovers(pg_dsn) == []
    # and the same run without the fault goes through
    assert by_name(load(pg_dsn, "wisconsin", "--rows", "4000", "--tables", "w1", "--seed",
                        "5"))["w1"].status == "loaded"


def test_swap_blocked_by_a_view_keeps_old_table(pg_dsn, load):
    """If the old table cannot be dropped (a view depends on it), the swap transaction
    rolls back: the old table and the view stay, the error names the cause."""
    load(pg_dsn, "wisconsin", "--rows", "1000", "--tables", "w1")
    before = (oid(pg_dsn, "w1"), content_md5(pg_dsn, "w1"))
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE VIEW v1 AS SELECT unique1 FROM w1")
    with pytest.raises(LoadFailed) as failure:
        load(pg_dsn, "wisconsin", "--rows", "1000", "--tables", "w1", "--seed", "3")
    assert "w1 not replaced" in str(failure.value)
    assert "depend" in str(failure.value)
    assert (oid(pg_dsn, "w1"), content_md5(pg_dsn, "w1")) == before
    assert scalar(pg_dsn, "SELECT count(*) FROM v1") == 1000
    assert leftovers(pg_dsn) == []


def test_existing_table_of_another_schema_needs_force(pg_dsn, load):
    """A table of another schema, or one spark_loader did not make, is refused without
    --force and nothing at all is changed (the other tables of the set are not created
    either); with --force it is replaced."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE tenk3 (a int)")
        conn.execute("INSERT INTO tenk3 VALUES (1)")
    with pytest.raises(ConflictError) as refused:
        load(pg_dsn, "tenk")
    assert "tenk3 exists with another schema" in str(refused.value)
    assert "--force" in str(refused.value)
    assert scalar(pg_dsn, "SELECT count(*) FROM tenk3") == 1
    assert scalar(pg_dsn, "SELECT count(*) FROM pg_class WHERE relname LIKE 'tenk%%'") == 1

    report = by_name(load(pg_dsn, "tenk", "--force"))
    assert report["tenk3"].rows == 10_000
    assert scalar(pg_dsn, "SELECT count(*) FROM tenk3") == 10_000


def test_same_schema_table_not_made_by_loader_needs_force(pg_dsn, load):
    """A table with the right columns but not made by spark_loader (no marker) is not
    replaced without --force."""
    load(pg_dsn, "wisconsin", "--rows", "100", "--tables", "w1")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("COMMENT ON TABLE w1 IS 'mine'")
    with pytest.raises(ConflictError, match="not created by spark_loader"):
        load(pg_dsn, "wisconsin", "--rows", "100", "--tables", "w1", "--seed", "1")
    assert by_name(load(pg_dsn, "wisconsin", "--rows", "100", "--tables", "w1", "--seed", "1",
                        "--force"))["w1"].status == "loaded"


def test_cli_prints_summary_and_exit_status(pg_dsn, spark, capsys):
    """main() prints per table the row count and checksum, and returns 0; a refused run
    returns 1 with a one-line reason on stderr."""
    assert main(["rst", "--rows", "1000", "--dsn", pg_dsn, "--quiet"], spark=spark) == 0
    out = capsys.readouterr().out
    for table in ("r", "s", "t"):
        assert any(line.split()[:3] == [table, "loaded", "1,000"] for line in out.splitlines())
    assert "3,000 rows loaded" in out
    assert main(["rst", "--rows", "1000", "--dsn", pg_dsn, "--quiet"], spark=spark) == 0
    assert "nothing to do" in capsys.readouterr().out
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE tenk1 (x text)")
    assert main(["tenk", "--dsn", pg_dsn, "--quiet"], spark=spark) == 1
    err = capsys.readouterr().err
    assert err.startswith("spark_loader: error: nothing was changed")
    assert "Traceback" not in err


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "spark_loader", *args], check=False, cwd=REPO,
                          env=full_env, capture_output=True, text=True, timeout=120)


def test_connection_errors_are_clear(pg_dsn, tmp_path):
    """Unreachable server, unknown role, missing database and missing schema each give
    one clear line and exit status 1, before Spark starts (no traceback)."""
    info = psycopg.conninfo.conninfo_to_dict(pg_dsn)
    base = {k: v for k, v in info.items() if k in ("host", "port", "user", "dbname")}
    cases = [
        ({**base, "host": str(tmp_path), "port": "1"}, "cannot reach the PostgreSQL server"),
        ({**base, "user": "no_such_role"}, "authentication failed"),
        ({**base, "dbname": "no_such_db"}, "database does not exist"),
    ]
    for params, message in cases:
        dsn = psycopg.conninfo.make_conninfo(**params)
        result = _cli("tenk", "--dsn", dsn)
        assert result.returncode == 1, result.stderr
        assert f"spark_loader: error: {message}" in result.stderr
        assert "Traceback" not in result.stderr
        assert "starting Spark" not in result.stderr
    result = _cli("tenk", "--dsn", pg_dsn, "--schema", "no_such_schema")
    assert result.returncode == 1
    assert "schema 'no_such_schema' does not exist" in result.stderr
    # the PG* environment is used without --dsn
    result = _cli("tenk", env={"PGHOST": str(tmp_path), "PGPORT": "1"})
    assert result.returncode == 1
    assert "cannot reach the PostgreSQL server" in result.stderr
