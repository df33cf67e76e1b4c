"""The row generators, checksums and argument checks on their own (no Spark, no database)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from spark_loader import rst, tpch, wisconsin
from spark_loader.checksum import combine_parts, crc32_combine
from spark_loader.datasets import derived_name, index_name, tpch_tables, units
from spark_loader.permutation import Permutation

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 17, 100, 255, 256, 257, 1000, 4099])
def test_permutation_is_a_bijection(n):
    """P is a permutation of 0..n-1 for sizes around powers of two and four."""
    perm = Permutation(n, seed=7, label="t")
    assert sorted(perm(i) for i in range(n)) == list(range(n))


def test_permutation_depends_on_seed_and_label_only():
    """Same seed and label give the same permutation (any process, any split); another
    seed or label gives another one, and it is far from the identity."""
    n = 5000
    a = [Permutation(n, 1, "tenk1")(i) for i in range(n)]
    assert a == [Permutation(n, 1, "tenk1")(i) for i in range(n)]
    assert a != [Permutation(n, 2, "tenk1")(i) for i in range(n)]
    assert a != [Permutation(n, 1, "tenk2")(i) for i in range(n)]
    assert sum(1 for i, v in enumerate(a) if i == v) < 20


def _wisconsin_rows(n: int, width: int = 244, lo: int = 0, hi: int | None = None):
    params = {"rows": n, "seed": 0, "label": "w", "width": width}
    text = b"".join(wisconsin.chunks(params, lo, n if hi is None else hi)).decode()
    return [line.split("\t") for line in text.splitlines()]


def test_wisconsin_rows_follow_dewitt():
    """Every attribute is derived from unique1/unique2 as in DeWitt's definition, and the
    tuple is 244 bytes wide: 13 four-byte integers and three 64-character strings."""
    n = 2000
    table = _wisconsin_rows(n)
    assert len(table) == n
    for u2, row in enumerate(table):
        assert len(row) == len(wisconsin.COLUMNS) == 16
        ints = list(map(int, row[:13]))
        u1 = ints[0]
        assert ints[1] == u2
        assert ints[2:13] == [u1 % 2, u1 % 4, u1 % 10, u1 % 20, u1 % 100, u1 % 10, u1 % 5,
                              u1 % 2, u1, (u1 % 100) * 2, (u1 % 100) * 2 + 1]
        assert row[13] == wisconsin.unique_string(u1, 64)
        assert row[14] == wisconsin.unique_string(u2, 64)
        assert row[15] == "AHOV"[u2 % 4] * 4 + "x" * 60
        assert 13 * 4 + sum(len(s) for s in row[13:]) == 244
    assert sorted(int(r[0]) for r in table) == list(range(n))


def test_wisconsin_strings_and_widths():
    """stringu1 is unique1 in base 26 on seven letters; other widths split the string
    bytes as evenly as possible; widths below 73 bytes are refused."""
    assert wisconsin.unique_string(0, 7) == "AAAAAAA"
    assert wisconsin.unique_string(1, 9) == "AAAAAABxx"
    assert wisconsin.unique_string(26 * 26 + 25, 7) == "AAAABAZ"
    assert wisconsin.string_lengths(244) == (64, 64)
    assert wisconsin.string_lengths(208) == (52, 52)       # DeWitt's 1983 tuples
    assert wisconsin.string_lengths(100) == (16, 16)
    assert wisconsin.string_lengths(101) == (16, 17)
    with pytest.raises(ValueError):
        wisconsin.string_lengths(72)


def test_wisconsin_ranges_concatenate_to_the_whole():
    """Rows generated in ranges (as parts in separate tasks) equal rows generated at once."""
    whole = _wisconsin_rows(3000, 100)
    split = _wisconsin_rows(3000, 100, 0, 1234) + _wisconsin_rows(3000, 100, 1234, 3000)
    assert whole == split


def test_rst_join_structure():
    """Over the first half each S row joins exactly 5 R rows and no T row; over the second
    half each S row joins exactly 5 T rows and no R row; so R JOIN S JOIN T is empty."""
    n = 1000
    tables = {}
    for role in rst.TABLES:
        params = {"role": role, "rows": n, "seed": 3, "width": 100}
        text = b"".join(rst.chunks(params, 0, n)).decode()
        tables[role] = [tuple(line.split("\t")) for line in text.splitlines()]
    r_a = Counter(int(r[1]) for r in tables["r"])
    t_b = Counter(int(t[2]) for t in tables["t"])
    for i, s in enumerate(tables["s"]):
        sid, a, b = int(s[0]), int(s[1]), int(s[2])
        assert sid == i
        if i < n // 2:
            assert (r_a[a], t_b[b]) == (5, 0)
        else:
            assert (r_a[a], t_b[b]) == (0, 5)
    for role in rst.TABLES:
        assert [int(row[0]) for row in tables[role]] == list(range(n))
        assert all(12 + len(row[3]) == 100 for row in tables[role])


def test_crc32_combine_matches_zlib():
    """Combining the parts' CRCs in order gives the CRC of the concatenation."""
    rng = random.Random(5)
    for _ in range(100):
        parts = [os.urandom(rng.randint(0, 2000)) for _ in range(rng.randint(1, 5))]
        assert combine_parts((zlib.crc32(p), len(p)) for p in parts) == zlib.crc32(b"".join(parts))
    assert crc32_combine(zlib.crc32(b"abc"), zlib.crc32(b""), 0) == zlib.crc32(b"abc")


def test_tpch_generator_parts_union_is_dbgen_output():
    """The parts tpchgen-cli produces for one table concatenate to the single-part output
    (that is what lets tasks generate parts independently)."""
    params = {"table": "orders", "sf": "0.01", "tpchgen": None}
    whole = b"".join(tpch.chunks(params, 1, 1))
    parts = b"".join(b"".join(tpch.chunks(params, k, 3)) for k in (1, 2, 3))
    assert whole == parts
    assert whole.count(b"\n") == 15000
    assert not whole.endswith(b"|\n")


def test_strip_separators_wherever_the_text_is_cut():
    """The trailing ``|`` of every line is dropped however the generator's output is cut
    into pieces (also right after a ``|``); a field separator is kept; output that does
    not end with a newline is refused."""
    text = b"1|A|x|\n2|B||\n3|C|y|\n"
    expected = b"1|A|x\n2|B|\n3|C|y\n"
    for i in range(len(text) + 1):
        for j in range(i, len(text) + 1):
            pieces = [text[:i], text[i:j], text[j:]]
            assert b"".join(tpch.strip_separators(pieces)) == expected, (i, j)
    assert b"".join(tpch.strip_separators([bytes([c]) for c in text])) == expected
    for truncated in (text[:-1], text[:-2], b"1|A"):
        with pytest.raises(RuntimeError, match="does not end with a newline"):
            b"".join(tpch.strip_separators([truncated]))


def test_tpch_table_streams_equal_single_table_output(tmp_path):
    """One generator run for several tables, each read from its named pipe while it is
    written (concurrently, in any order), gives each table exactly the text of a
    generator run for that table alone."""
    from concurrent.futures import ThreadPoolExecutor

    names = ["region", "nation", "supplier", "customer"]
    params: list[dict[str, Any]] = [{"table": t, "sf": "0.01", "tpchgen": None} for t in names]
    streams = tpch.TableStreams(params, str(tmp_path))
    try:
        with ThreadPoolExecutor(len(names)) as pool:
            got = dict(zip(names, pool.map(
                lambda t: b"".join(streams.chunks(t)), reversed(names)), strict=True))
    finally:
        streams.close()
        streams.close_unread()
    got = dict(zip(reversed(names), got.values(), strict=True))
    for p in params:
        assert got[p["table"]] == b"".join(tpch.chunks(p, 1, 1)), p["table"]
    assert got["supplier"].count(b"\n") == 100
    assert streams.proc.returncode == 0


def test_tpch_table_streams_fail_when_the_generator_fails(tmp_path):
    """A generator killed midway ends the table's stream with an error, never with what
    looks like a complete table."""
    streams = tpch.TableStreams([{"table": "orders", "sf": "0.1", "tpchgen": None}],
                                str(tmp_path))
    try:
        chunks = streams.chunks("orders")
        received = len(next(chunks))
        streams.proc.kill()
        with pytest.raises(RuntimeError, match="tpchgen-cli failed"):
            for chunk in chunks:
                received += len(chunk)
        assert received < 17_000_000        # orders at SF 0.1 is 17 MB
    finally:
        streams.close()
        streams.close_unread()


def test_tpch_schema_keys_and_parts():
    """Every table has a primary key and an index for each foreign key not covered by
    another index; big tables split into parts, nation and region never do."""
    assert tpch.fk_indexes("lineitem") == (("l_partkey", "l_suppkey"), ("l_suppkey",))
    assert tpch.fk_indexes("partsupp") == (("ps_suppkey",),)
    assert tpch.fk_indexes("region") == ()
    specs = {s.name: s for s in tpch_tables("1", "", None, None)}
    assert set(specs) == set(tpch.TABLES)
    lineitem = units(specs["lineitem"], "public", "st", "lg", 192 * 2**20)
    assert [u.part for u in lineitem] == [1, 2, 3, 4]
    assert {u.nparts for u in lineitem} == {4}
    assert len(units(specs["nation"], "public", "st", "lg", 1)) == 1
    big = {s.name: s for s in tpch_tables("1000", "", None, None)}
    assert dict(big["orders"].columns)["o_orderkey"] == "bigint"


def test_derived_names_fit_postgres_limits():
    """Staging and index names stay within 63 bytes and distinct for long table names."""
    long_a, long_b = "a" * 60 + "x", "a" * 60 + "y"
    assert len(derived_name(long_a, "sl_staging")) <= 63
    assert derived_name(long_a, "sl_staging") != derived_name(long_b, "sl_staging")
    assert index_name("lineitem", ("l_suppkey",)) == "lineitem_l_suppkey_idx"
    assert derived_name("tenk1", "pkey", sep="_") == "tenk1_pkey"


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "spark_loader", *args], check=False, cwd=REPO,
                          env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("args", "message"), [
    (["tpch", "--sf", "0"], "invalid scale factor '0'"),
    (["tpch", "--sf", "-1"], "invalid scale factor '-1'"),
    (["tpch", "--sf", "abc"], "invalid scale factor 'abc'"),
    (["tpch", "--sf", "inf"], "invalid scale factor 'inf'"),
    (["wisconsin", "--rows", "0"], "invalid row count '0'"),
    (["wisconsin", "--rows", "3000000000"], "invalid row count"),
    (["wisconsin", "--rows", "ten"], "invalid row count 'ten'"),
    (["tenk", "--tuple-width", "60"], "invalid tuple width '60'"),
    (["rst", "--rows", "1005"], "must be a multiple of 10"),
    (["wisconsin", "--rows", "10", "--tables", "Bad-Name"], "invalid table name"),
    (["tenk", "--part-size", "0"], "invalid part size"),
    (["tpch", "--sf", "0.01", "--tables", "lineitem,foo"], "unknown TPC-H table 'foo'"),
    (["tenk", "--index", "nosuchcol"], "no table of this data set has column(s) nosuchcol"),
])
def test_invalid_parameters_are_refused_clearly(args, message):
    """Invalid sizes, scale factors and options stop the CLI with exit status 2 and a
    one-line message, before connecting to anything (no traceback)."""
    result = _cli(*args, "--dsn", "host=/nonexistent port=1")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_task_error_names_the_python_exception():
    """The task's own exception, from the text PySpark raises on the driver: with a
    SparkSession the traceback starts a line; with a bare SparkContext (the loader's)
    it follows Spark's prefix on the same line, and a SQLSTATE line follows."""
    from spark_loader.loader import task_error

    frames = ('  File "worker.py", line 1, in process\n    out = func()\n'
              '  File "tasks.py", line 9, in copy_unit\n')
    session_text = ("An exception was thrown from the Python worker. Please see the stack "
                    "trace below.\nTraceback (most recent call last):\n" + frames
                    + "spark_loader.tasks.InjectedFailure: injected failure in w1 part 3\n")
    context_text = ("An error occurred while calling z:org.apache.spark.api.python.PythonRDD"
                    ".collectAndServe.\n: org.apache.spark.api.python.PythonException: "
                    "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: "
                    "Traceback (most recent call last):\n" + frames
                    + "psycopg.OperationalError: connection failed\n SQLSTATE: 38000\n"
                    "\tat org.apache.spark.api.python.BasePythonRunner.read(x.scala:1)\n")
    chained = (context_text.replace("psycopg.OperationalError: connection failed",
                                    "KeyError: 'x'\n\nDuring handling of the above "
                                    "exception, another exception occurred:\n\n"
                                    "Traceback (most recent call last):\n" + frames
                                    + "ValueError: the last one"))
    assert task_error(RuntimeError(session_text)) == (
        "InjectedFailure: injected failure in w1 part 3")
    assert task_error(RuntimeError(context_text)) == "OperationalError: connection failed"
    assert task_error(RuntimeError(chained)) == "ValueError: the last one"
    assert task_error(RuntimeError("\nno traceback here\nsecond")) == "no traceback here"
