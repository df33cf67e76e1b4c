"""TPC-H: the schema, and the executor-side generator that streams dbgen's rows.

Rows come from ``tpchgen-cli`` (a Rust port of dbgen whose output is byte-identical
to dbgen's ``.tbl`` files).  A table of scale factor ``sf`` is split into ``N``
parts; the Spark task for part ``K`` runs ``tpchgen-cli -s sf -T table --parts N
--part K --stdout`` and streams its output into ``COPY``, so no task holds more
than a read buffer and the union of the parts is exactly dbgen's table.

Small tables would each pay the generator's fixed start-up (it builds dbgen's 300 MB
text pool: ~0.7 CPU-seconds whatever the table), so whole tables smaller than a
32nd of a part are *bundled*: one task runs the generator once for all of them,
into files on the executor's local disk, then copies each.

dbgen ends every line with the field separator (``1|ALGERIA|0|comment|``); that
trailing ``|`` is dropped on the fly, so each line is PostgreSQL ``COPY`` text
with ``DELIMITER '|'`` (dbgen data holds no backslashes, tabs or ``|``).

Schema: the DDL of the TPC-H specification (section 1.4), with ``integer`` keys;
above scale factor 300 the order keys no longer fit and become ``bigint``.
Primary keys as in the specification; an index for every foreign key that is not
already the leading column(s) of the primary key or of another index.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator

# table -> ((column, type), ...); types are PostgreSQL's format_type() spellings
_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "region": (
        ("r_regionkey", "integer"), ("r_name", "character(25)"),
        ("r_comment", "character varying(152)"),
    ),
    "nation": (
        ("n_nationkey", "integer"), ("n_name", "character(25)"), ("n_regionkey", "integer"),
        ("n_comment", "character varying(152)"),
    ),
    "supplier": (
        ("s_suppkey", "integer"), ("s_name", "character(25)"),
        ("s_address", "character varying(40)"), ("s_nationkey", "integer"),
        ("s_phone", "character(15)"), ("s_acctbal", "numeric(15,2)"),
        ("s_comment", "character varying(101)"),
    ),
    "customer": (
        ("c_custkey", "integer"), ("c_name", "character varying(25)"),
        ("c_address", "character varying(40)"), ("c_nationkey", "integer"),
        ("c_phone", "character(15)"), ("c_acctbal", "numeric(15,2)"),
        ("c_mktsegment", "character(10)"), ("c_comment", "character varying(117)"),
    ),
    "part": (
        ("p_partkey", "integer"), ("p_name", "character varying(55)"),
        ("p_mfgr", "character(25)"), ("p_brand", "character(10)"),
        ("p_type", "character varying(25)"), ("p_size", "integer"),
        ("p_container", "character(10)"), ("p_retailprice", "numeric(15,2)"),
        ("p_comment", "character varying(23)"),
    ),
    "partsupp": (
        ("ps_partkey", "integer"), ("ps_suppkey", "integer"), ("ps_availqty", "integer"),
        ("ps_supplycost", "numeric(15,2)"), ("ps_comment", "character varying(199)"),
    ),
    "orders": (
        ("o_orderkey", "integer"), ("o_custkey", "integer"), ("o_orderstatus", "character(1)"),
        ("o_totalprice", "numeric(15,2)"), ("o_orderdate", "date"),
        ("o_orderpriority", "character(15)"), ("o_clerk", "character(15)"),
        ("o_shippriority", "integer"), ("o_comment", "character varying(79)"),
    ),
    "lineitem": (
        ("l_orderkey", "integer"), ("l_partkey", "integer"), ("l_suppkey", "integer"),
        ("l_linenumber", "integer"), ("l_quantity", "numeric(15,2)"),
        ("l_extendedprice", "numeric(15,2)"), ("l_discount", "numeric(15,2)"),
        ("l_tax", "numeric(15,2)"), ("l_returnflag", "character(1)"),
        ("l_linestatus", "character(1)"), ("l_shipdate", "date"), ("l_commitdate", "date"),
        ("l_receiptdate", "date"), ("l_shipinstruct", "character(25)"),
        ("l_shipmode", "character(10)"), ("l_comment", "character varying(44)"),
    ),
}

TABLES = tuple(_COLUMNS)
COLUMNS = _COLUMNS  # public: the column definitions, per table

PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    "region": ("r_regionkey",),
    "nation": ("n_nationkey",),
    "supplier": ("s_suppkey",),
    "customer": ("c_custkey",),
    "part": ("p_partkey",),
    "partsupp": ("ps_partkey", "ps_suppkey"),
    "orders": ("o_orderkey",),
    "lineitem": ("l_orderkey", "l_linenumber"),
}

# (table, columns) -> (referenced table, columns), per the specification
FOREIGN_KEYS: tuple[tuple[str, tuple[str, ...], str, tuple[str, ...]], ...] = (
    ("nation", ("n_regionkey",), "region", ("r_regionkey",)),
    ("supplier", ("s_nationkey",), "nation", ("n_nationkey",)),
    ("customer", ("c_nationkey",), "nation", ("n_nationkey",)),
    ("partsupp", ("ps_partkey",), "part", ("p_partkey",)),
    ("partsupp", ("ps_suppkey",), "supplier", ("s_suppkey",)),
    ("orders", ("o_custkey",), "customer", ("c_custkey",)),
    ("lineitem", ("l_orderkey",), "orders", ("o_orderkey",)),
    ("lineitem", ("l_partkey", "l_suppkey"), "partsupp", ("ps_partkey", "ps_suppkey")),
    ("lineitem", ("l_partkey",), "part", ("p_partkey",)),
    ("lineitem", ("l_suppkey",), "supplier", ("s_suppkey",)),
)

# rows at scale factor 1 (nation and region do not scale; lineitem is approximate)
BASE_ROWS = {
    "region": 5, "nation": 25, "supplier": 10_000, "customer": 150_000, "part": 200_000,
    "partsupp": 800_000, "orders": 1_500_000, "lineitem": 6_001_215,
}
FIXED_SIZE = ("region", "nation")
# average bytes per COPY line (measured on dbgen output), to size the parts
LINE_BYTES = {
    "region": 77, "nation": 88, "supplier": 140, "customer": 161, "part": 120,
    "partsupp": 148, "orders": 114, "lineitem": 126,
}
MIN_SF = 0.0001            # one supplier
MAX_SF = 100_000.0
BIGINT_ORDERKEY_SF = 300   # 6,000,000 * sf order keys fit an int4 up to here
READ_BYTES = 1 << 20
PIPE_BYTES = 1 << 20


def columns(table: str, sf: float) -> tuple[tuple[str, str], ...]:
    """The columns of ``table`` at scale factor ``sf``."""
    cols = _COLUMNS[table]
    if sf > BIGINT_ORDERKEY_SF:
        cols = tuple((n, "bigint" if n in ("o_orderkey", "l_orderkey") else t) for n, t in cols)
    return cols


def fk_indexes(table: str) -> tuple[tuple[str, ...], ...]:
    """Indexes for the foreign keys of ``table`` not served by a prefix of another index."""
    pk = PRIMARY_KEYS[table]
    chosen: list[tuple[str, ...]] = []
    fks = sorted((fk[1] for fk in FOREIGN_KEYS if fk[0] == table), key=len, reverse=True)
    for cols in fks:
        if any(idx[:len(cols)] == cols for idx in (pk, *chosen)):
            continue
        chosen.append(cols)
    return tuple(chosen)


def expected_rows(table: str, sf: float) -> int:
    """Approximate row count of ``table`` at ``sf`` (exact except for lineitem)."""
    return BASE_ROWS[table] if table in FIXED_SIZE else max(1, int(BASE_ROWS[table] * sf))


def find_tpchgen(hint: str | None = None) -> str | None:
    """The tpchgen-cli executable: ``hint``, then next to this Python, then on PATH."""
    if hint and os.access(hint, os.X_OK):
        return hint
    beside = os.path.join(os.path.dirname(sys.executable), "tpchgen-cli")
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("tpchgen-cli")


def _command(params: dict) -> list[str]:
    exe = find_tpchgen(params.get("tpchgen"))
    if exe is None:
        raise RuntimeError("tpchgen-cli not found on this Spark executor "
                           "(pip install tpchgen-cli in the executors' Python environment)")
    return [exe, "--scale-factor", params["sf"], "--num-threads", "1", "--quiet",
            "--no-progress"]


def strip_separators(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """dbgen text to COPY text: drop the ``|`` that ends every line.

    ``pieces`` may be cut anywhere (not only at line ends); a ``|`` at the end of a
    piece is held back until the next piece shows whether a newline follows it.  Per
    piece one split at the ``|\n`` and one join (a third less CPU than
    ``bytes.replace`` of the two bytes).  Raises if the text does not end with a
    newline (a truncated generator output)."""
    held = False
    last = b"\n"
    for data in pieces:
        if not data:
            continue
        if held and data[:1] != b"\n":
            yield b"|"                      # a field separator after all
        held = data.endswith(b"|")
        last = data[-1:]
        if held:
            data = data[:-1]
        if data:
            yield b"\n".join(data.split(b"|\n"))
    if held or last != b"\n":
        raise RuntimeError("tpchgen-cli output does not end with a newline")


def _read_pieces(stream) -> Iterator[bytes]:
    while data := stream.read(READ_BYTES):
        yield data


def _widen_pipe(fd: int) -> None:
    """A 1 MB pipe buffer (Linux): fewer wake-ups of the generator and of the reader."""
    with contextlib.suppress(AttributeError, OSError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def _check_exit(proc: subprocess.Popen, stderr: bytes | str) -> None:
    if proc.wait() != 0:
        err = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
        raise RuntimeError(f"tpchgen-cli failed ({proc.returncode}): {err.strip()}")


class _Fifo:
    """A named pipe the generator writes one table into, as if it were its file.

    Opened for reading at once (non-blocking, so the open does not wait), plus a
    *hold* write end of our own: until the generator has opened its end, a read
    would otherwise see end-of-file.  The hold is released when the first bytes
    arrive (the generator is connected) or when the generator has exited."""

    def __init__(self, path: str) -> None:
        os.mkfifo(path, 0o600)
        self.path = path
        self.rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._hold: int | None = os.open(path, os.O_WRONLY)
        os.set_blocking(self.rfd, True)
        _widen_pipe(self.rfd)
        self._lock = threading.Lock()
        self.started = False

    def release(self) -> None:
        with self._lock:
            if self._hold is not None:
                os.close(self._hold)
                self._hold = None

    def pieces(self) -> Iterator[bytes]:
        self.started = True
        with os.fdopen(self.rfd, "rb", buffering=0) as raw:
            stream = io.BufferedReader(raw, READ_BYTES)
            first = True
            while data := stream.read(READ_BYTES):
                if first:
                    self.release()
                    first = False
                yield data


class TableStreams:
    """One generator run for several whole tables, each streamed as it is written.

    ``tpchgen-cli --output-dir DIR`` writes each table to ``DIR/<table>.tbl.inprogress``
    and renames it when done; those paths are named pipes here, so every table is
    read while it is generated, without touching the disk (if a generator version
    wrote elsewhere, the table's regular file is read after the run instead).
    :meth:`chunks` of each table must be consumed concurrently (one thread per
    table), since the generator may write the tables in any order.  Every table's
    stream ends only after the generator has exited successfully, so a failed run
    never looks like a complete table."""

    def __init__(self, tables: list[dict], workdir: str) -> None:
        self.names = [p["table"] for p in tables]
        self.workdir = workdir
        self.fifos = {n: _Fifo(os.path.join(workdir, f"{n}.tbl.inprogress"))
                      for n in self.names}
        cmd = [*_command(tables[0]), "--tables", ",".join(self.names),
               "--output-dir", workdir, "--overwrite"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._done = threading.Event()
        self._stderr = b""
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        assert self.proc.stderr is not None
        self._stderr = self.proc.stderr.read()
        self.proc.wait()
        self._done.set()
        for fifo in self.fifos.values():     # tables never opened end now
            fifo.release()

    def chunks(self, table: str) -> Iterator[bytes]:
        """COPY text of ``table``, from the generator as it writes it."""
        fifo = self.fifos[table]
        seen = False
        for data in strip_separators(self._pieces(fifo)):
            seen = True
            yield data
        if not seen:
            raise RuntimeError(f"tpchgen-cli wrote no rows for {table}")

    def _pieces(self, fifo: _Fifo) -> Iterator[bytes]:
        got = False
        for data in fifo.pieces():
            got = True
            yield data
        self._done.wait()
        _check_exit(self.proc, self._stderr)
        path = os.path.join(self.workdir, os.path.basename(fifo.path).removesuffix(
            ".inprogress"))
        if not got and os.path.isfile(path):          # written as a regular file
            with open(path, "rb") as f:
                yield from _read_pieces(f)

    def close(self) -> None:
        """Stop the generator if it still runs (a table's load failed)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self._watcher.join()
        for fifo in self.fifos.values():
            fifo.release()

    def close_unread(self) -> None:
        """Close the read ends nobody started reading (once no thread uses them)."""
        for fifo in self.fifos.values():
            if not fifo.started:
                fifo.started = True
                os.close(fifo.rfd)


def chunks(params: dict, part: int, nparts: int) -> Iterator[bytes]:
    """COPY text (``|``-separated) of part ``part`` (1-based) of ``nparts`` of one table.

    ``params``: ``table``, ``sf`` (string), ``tpchgen`` (optional path).
    """
    cmd = [*_command(params), "--tables", params["table"], "--stdout"]
    if nparts > 1:
        cmd += ["--parts", str(nparts), "--part", str(part)]
    with tempfile.TemporaryFile() as errfile:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errfile)
        assert proc.stdout is not None
        _widen_pipe(proc.stdout.fileno())
        try:
            yield from strip_separators(_read_pieces(proc.stdout))
            errfile.seek(0)
            _check_exit(proc, errfile.read())
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
