"""Small query helpers for the spark_loader tests."""

from __future__ import annotations

from typing import Any

import psycopg

from spark_loader.loader import Report


def scalar(dsn: str, query: str, params: tuple = ()) -> Any:
    """The first column of the first row of ``query``."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query, params or None).fetchone()
    return row[0] if row else None


def rows(dsn: str, query: str, params: tuple = ()) -> list[tuple]:
    """All rows of ``query``."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(query, params or None).fetchall()


def by_name(report: Report) -> dict:
    """The report's per-table results keyed by table name."""
    return {t.name: t for t in report.tables}
