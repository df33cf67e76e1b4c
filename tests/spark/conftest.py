"""Spark fixtures for the spark_loader tests.

One SparkContext for the whole test session (``local[2]``, built by the loader's
own :func:`spark_loader.session.start_spark`, so with its explicit settings:
adaptive execution off, scratch space in a temporary directory, never in the
checkout).  PostgreSQL comes from ``tests/conftest.py``: ``pg_dsn`` is a fresh
database per test.

``load(dsn, *args)`` runs the loader as the CLI would (``spark_loader.cli.run``)
in this SparkContext and returns its :class:`~spark_loader.loader.Report`.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from spark_loader.cli import run
from spark_loader.loader import Report
from spark_loader.session import start_spark


@pytest.fixture(scope="session")
def spark():
    """The test session's SparkContext: two local cores, small fixed shuffle partitions."""
    session = start_spark(
        "local[2]",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
        app_name="spark_loader tests",
    )
    yield session
    session.stop()


@pytest.fixture
def load(spark) -> Callable[..., Report]:
    """``load(dsn, dataset, *options)``: one quiet loader run in the shared session."""

    def run_loader(dsn: str, *args: str) -> Report:
        return run([*args, "--dsn", dsn, "--quiet"], spark=spark)

    return run_loader
