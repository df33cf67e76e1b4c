"""The data sets: which tables, their schema and keys, and how they split into parts.

Driver side.  A data set is a list of :class:`TableSpec`; :func:`units` cuts a table
into :class:`~spark_loader.tasks.Unit` parts of about ``part_bytes`` each.

==============  ===============================================================
``wisconsin``   Wisconsin relations of ``--rows`` rows, named by ``--tables``
``tenk``        ``tenk1`` .. ``tenk5``, 10,000 rows each (``001`` section 3.1)
``hundredk``    ``hundredk1`` .. ``hundredk5``, 100,000 rows each
``synthetic20`` ``syn1k_1..5``, ``syn10k_1..5``, ``syn50k_1..5``, ``syn100k_1..5``:
                the 20 tables of the STAIRs random workload (``002`` section 5.3)
``tpch``        the eight TPC-H tables at scale factor ``--sf``
``rst``         ``r``, ``s``, ``t`` of ``002`` section 5.4
``misest``      the 13 tables of the misestimation workload (issue 48) at ``--scale``
==============  ===============================================================
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

from spark_loader import misest, rst, tpch, wisconsin
from spark_loader.errors import UsageError
from spark_loader.tasks import Unit

NAMEDATALEN = 63

WISCONSIN_SETS: dict[str, tuple[tuple[str, int], ...]] = {
    "tenk": tuple((f"tenk{i}", 10_000) for i in range(1, 6)),
    "hundredk": tuple((f"hundredk{i}", 100_000) for i in range(1, 6)),
    "synthetic20": tuple(
        (f"syn{label}_{i}", rows)
        for label, rows in (("1k", 1_000), ("10k", 10_000), ("50k", 50_000), ("100k", 100_000))
        for i in range(1, 6)
    ),
}
DATASETS = ("wisconsin", *WISCONSIN_SETS, "tpch", "rst", "misest")


@dataclass(frozen=True)
class TableSpec:
    """One table to produce: its final name, schema, keys, and generator parameters."""

    name: str                                   # final name (with --prefix)
    columns: tuple[tuple[str, str], ...]        # (name, format_type spelling)
    primary_key: tuple[str, ...]
    indexes: tuple[tuple[str, ...], ...]        # secondary indexes
    order_by: tuple[str, ...]                   # physical order ("" = load order)
    generator: str
    params: dict = field(hash=False)            # what the executor-side generator needs
    identity: dict = field(hash=False)          # what determines the content (marker)
    est_rows: int = 0
    est_line_bytes: int = 100
    delimiter: str = "\t"
    splittable: bool = True                     # may be cut into several parts

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.columns)

    def marker_params(self) -> dict:
        """Everything that determines this table: compared to skip an identical reload."""
        return {
            **self.identity,
            "primary_key": list(self.primary_key),
            "indexes": [list(i) for i in self.indexes],
            "order_by": list(self.order_by),
        }


def derived_name(name: str, tag: str, sep: str = "__") -> str:
    """``name + sep + tag`` within PostgreSQL's 63-byte limit (a hash keeps it unique)."""
    full = f"{name}{sep}{tag}"
    if len(full.encode()) <= NAMEDATALEN:
        return full
    digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    keep = NAMEDATALEN - len(tag.encode()) - len(digest) - len(sep) - 1
    return f"{name.encode()[:max(keep, 0)].decode(errors='ignore')}_{digest}{sep}{tag}"[:63]


def index_name(table: str, cols: tuple[str, ...]) -> str:
    """PostgreSQL-style index name ``table_col1_col2_idx`` within 63 bytes."""
    return derived_name(table, "_".join((*cols, "idx")), sep="_")


def parse_column_specs(specs: list[str], option: str) -> list[tuple[str | None, tuple[str, ...]]]:
    """``[table.]col[,col...]`` strings into (table or None, columns)."""
    parsed = []
    for spec in specs:
        table, _, cols = spec.rpartition(".") if "." in spec.split(",")[0] else ("", "", spec)
        names = tuple(c.strip().lower() for c in cols.split(",") if c.strip())
        if not names:
            raise UsageError(f"{option} {spec!r}: no column given")
        parsed.append((table.strip() or None, names))
    return parsed


def apply_options(tables: list[TableSpec], prefix: str, index_specs: list[str],
                  order_specs: list[str]) -> list[TableSpec]:
    """Add ``--index`` and ``--order-by`` choices to the tables they name or fit."""
    extra: dict[str, list[tuple[str, ...]]] = {t.name: [] for t in tables}
    order: dict[str, tuple[str, ...]] = {}
    by_name = {t.name: t for t in tables}

    def targets(table: str | None, cols: tuple[str, ...], option: str) -> list[TableSpec]:
        if table is not None:
            spec = by_name.get(prefix + table) or by_name.get(table)
            if spec is None:
                raise UsageError(f"{option}: table {table!r} is not part of this data set "
                                 f"(tables: {', '.join(by_name)})")
            missing = [c for c in cols if c not in spec.column_names]
            if missing:
                raise UsageError(f"{option}: {spec.name} has no column {missing[0]!r}")
            return [spec]
        fits = [t for t in tables if all(c in t.column_names for c in cols)]
        if not fits:
            raise UsageError(f"{option}: no table of this data set has column(s) "
                             f"{', '.join(cols)}")
        return fits

    for table, cols in parse_column_specs(index_specs, "--index"):
        for spec in targets(table, cols, "--index"):
            if cols not in (spec.primary_key, *spec.indexes, *extra[spec.name]):
                extra[spec.name].append(cols)
    for table, cols in parse_column_specs(order_specs, "--order-by"):
        for spec in targets(table, cols, "--order-by"):
            order[spec.name] = cols
    return [
        TableSpec(**{**t.__dict__, "indexes": t.indexes + tuple(extra[t.name]),
                     "order_by": order.get(t.name, t.order_by)})
        for t in tables
    ]


def wisconsin_tables(named: list[tuple[str, int]], prefix: str, seed: int,
                     width: int) -> list[TableSpec]:
    """Wisconsin relations ``(logical name, rows)``; the logical name selects unique1."""
    int_cols = wisconsin.COLUMNS[:wisconsin.INT_COLUMNS]
    cols = tuple((c, "integer") for c in int_cols) + tuple(
        (c, "text") for c in wisconsin.COLUMNS[wisconsin.INT_COLUMNS:])
    specs = []
    for label, rows in named:
        params = {"rows": rows, "seed": seed, "label": label, "width": width}
        specs.append(TableSpec(
            name=prefix + label, columns=cols, primary_key=("unique2",), indexes=(),
            order_by=(), generator="wisconsin", params=params,
            identity={"dataset": "wisconsin", **params}, est_rows=rows,
            est_line_bytes=width + 40,
        ))
    return specs


def tpch_tables(sf: str, prefix: str, only: list[str] | None,
                tpchgen: str | None) -> list[TableSpec]:
    """The TPC-H tables at scale factor ``sf`` (a normalised decimal string)."""
    sf_value = float(sf)
    specs = []
    for table in tpch.TABLES:
        if only and table not in only:
            continue
        params = {"table": table, "sf": sf, "tpchgen": tpchgen}
        specs.append(TableSpec(
            name=prefix + table, columns=tpch.columns(table, sf_value),
            primary_key=tpch.PRIMARY_KEYS[table], indexes=tpch.fk_indexes(table),
            order_by=(), generator="tpch", params=params,
            identity={"dataset": "tpch", "table": table, "sf": sf},
            est_rows=tpch.expected_rows(table, sf_value),
            est_line_bytes=tpch.LINE_BYTES[table], delimiter="|",
            splittable=table not in tpch.FIXED_SIZE,
        ))
    return specs


def rst_tables(rows: int, prefix: str, seed: int, width: int) -> list[TableSpec]:
    """R, S and T of ``002`` section 5.4."""
    cols = (("id", "integer"), ("a", "integer"), ("b", "integer"), ("pad", "text"))
    specs = []
    for role in rst.TABLES:
        params = {"role": role, "rows": rows, "seed": seed, "width": width}
        specs.append(TableSpec(
            name=prefix + role, columns=cols, primary_key=("id",), indexes=(),
            order_by=(), generator="rst", params=params,
            identity={"dataset": "rst", **params}, est_rows=rows, est_line_bytes=width + 20,
        ))
    return specs


def misest_tables(scale: float, prefix: str, seed: int) -> list[TableSpec]:
    """The snowflake schema of the misestimation workload (spark_loader.misest)."""
    specs = []
    for table in misest.TABLES:
        cols = misest.COLUMNS[table]
        params = {"table": table, "seed": seed, "scale": scale}
        rows = misest.rows_of(table, scale)
        specs.append(TableSpec(
            name=prefix + table, columns=tuple((c, "integer") for c in cols),
            primary_key=(cols[0],), indexes=misest.INDEXES.get(table, ()), order_by=(),
            generator="misest", params=params,
            identity={"dataset": "misest", "rows": rows, **params}, est_rows=rows,
            est_line_bytes=6 * len(cols),
        ))
    return specs


def units(spec: TableSpec, schema: str, staging: str, ledger: str, part_bytes: int,
          fail_part: int | None = None) -> list[Unit]:
    """Cut ``spec`` into parts of about ``part_bytes`` (at least one row each)."""
    est_bytes = spec.est_rows * spec.est_line_bytes
    nparts = max(1, min(spec.est_rows, math.ceil(est_bytes / part_bytes)))
    if not spec.splittable:
        nparts = 1
    out = []
    for k in range(nparts):
        lo = spec.est_rows * k // nparts
        hi = spec.est_rows * (k + 1) // nparts
        fail = (hi - lo) // 2 if fail_part == k + 1 else None
        out.append(Unit(
            table=spec.name, schema=schema, staging=staging, ledger=ledger,
            generator=spec.generator, params=spec.params, part=k + 1, nparts=nparts,
            lo=lo, hi=hi, delimiter=spec.delimiter, est_bytes=est_bytes // nparts,
            fail_after_rows=fail,
        ))
    return out
