"""Shared pytest fixtures: one throwaway PostgreSQL 15 server per test session.

The server is started by pytest-postgresql (``postgresql_proc``) with the eddy
extension preloaded.  PostgreSQL refuses to run as root, so ``make test`` runs
pytest as the unprivileged ``postgres`` OS user (see tests/run-tests.sh).

Fixtures
--------
``postgresql``   a psycopg connection to a fresh database of its own (autocommit
                 off), dropped after the test.
``pg_dsn``       the libpq connection string of that same fresh database.
``eddy_conn``    an autocommit connection to that database in which
                 ``CREATE EXTENSION eddy`` has run (statements never prepared,
                 so that every execution is planned under the current settings).
"""

from __future__ import annotations

import os
import shutil

import psycopg
import pytest
from pytest_postgresql import factories

from eddytools.db import connect

PG_BINDIR = os.environ.get("PG_BINDIR", "/usr/lib/postgresql/15/bin")


def pg_ctl_path() -> str:
    """pg_ctl of PostgreSQL 15: in PG_BINDIR, else on the PATH."""
    path = os.path.join(PG_BINDIR, "pg_ctl")
    if not os.path.exists(path):
        found = shutil.which("pg_ctl")
        if found is None:
            raise RuntimeError("pg_ctl of PostgreSQL 15 not found; set PG_BINDIR")
        path = found
    return path


postgresql_proc = factories.postgresql_proc(
    executable=pg_ctl_path(),
    # -1: --postgresql-port (run-tests.sh's EDDY_TEST_PORT) if given, else a
    # random free port (None would ignore the option)
    port=-1,
    postgres_options=(
        "-c shared_preload_libraries=eddy "
        "-c max_parallel_workers_per_gather=0 "
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    ),
)
postgresql = factories.postgresql("postgresql_proc")


def dsn_of(conn: psycopg.Connection) -> str:
    """The connection string of the database ``conn`` is connected to."""
    info = conn.info
    return psycopg.conninfo.make_conninfo(
        host=info.host, port=info.port, user=info.user, dbname=info.dbname
    )


@pytest.fixture
def pg_dsn(postgresql: psycopg.Connection) -> str:
    """DSN of a fresh, empty database that is dropped after the test."""
    return dsn_of(postgresql)


@pytest.fixture
def eddy_conn(pg_dsn: str):
    """Autocommit connection to a fresh database with the extension created."""
    with connect(pg_dsn) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS eddy")
        yield conn
