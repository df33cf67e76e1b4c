"""Driver-side PostgreSQL work: connecting, inspecting, staging, finishing and swapping.

The life of one table ``T`` (all names schema-qualified, built with ``sql.Identifier``):

1. *Plan*: look at ``T`` if it exists.  Same schema and a spark_loader marker with the
   same parameters: nothing to do (unless ``--force``).  Same schema, made by
   spark_loader with other parameters: replace.  Anything else (another schema, no
   marker, not an ordinary table): refuse unless ``--force`` (views never).
2. *Stage*: create ``T__sl_<run>`` (autovacuum off while loading) and the ledger
   ``T__sl_<run>_parts``, dropping leftovers of interrupted runs for ``T`` first
   (found by their comment).  The run id in every name matters: a task of a failed
   run that is still finishing on some executor can only write into that run's
   staging tables (or fail because they are gone), never into a later run's.
3. Spark tasks ``COPY`` the parts into the staging table (:mod:`spark_loader.tasks`).
4. *Finish*: check that the ledger holds every part; optionally rewrite the rows in
   ``--order-by`` order; build the primary key's unique index and the other indexes
   side by side (:func:`build_indexes`), make the first the primary key; ``ANALYZE``.
5. *Swap*, in one transaction: drop ``T``, rename staging to ``T`` and its indexes to
   their final names, reset autovacuum, record the marker (a ``COMMENT ON TABLE``
   holding the parameters, row count and checksum), drop the ledger.  Readers see the
   old table or the new one, never a partial one; if anything fails the transaction
   rolls back and ``T`` is as it was.

On any failure the staging tables are dropped and ``T`` is left untouched.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from psycopg import sql

from spark_loader.checksum import combine_parts
from spark_loader.datasets import TableSpec, derived_name, index_name
from spark_loader.errors import ConflictError, ConnectError, LoaderError

MARKER_PREFIX = "spark_loader "
MARKER_VERSION = 1


# --------------------------------------------------------------------------- connecting

def _target(dsn: str) -> str:
    """``user@host:port/dbname`` as libpq would resolve it (DSN, then PG* variables)."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        params = {}
    host = params.get("host") or os.environ.get("PGHOST") or "default socket"
    port = params.get("port") or os.environ.get("PGPORT") or "5432"
    user = params.get("user") or os.environ.get("PGUSER") or os.environ.get("USER", "?")
    db = params.get("dbname") or os.environ.get("PGDATABASE") or user
    return f"{user}@{host}:{port}/{db}"


def explain_connect_error(dsn: str, exc: psycopg.Error) -> str:
    """One clear sentence for a failed connection, by cause."""
    text = str(exc).strip()
    server = [ln.split("FATAL:", 1)[1].strip() for ln in text.splitlines() if "FATAL:" in ln]
    detail = server[-1] if server else text.splitlines()[-1].strip() if text else repr(exc)
    target = _target(dsn)
    state = getattr(exc, "sqlstate", None)
    if state == "3D000" or re.search(r'database ".*" does not exist', text):
        return f"database does not exist ({target}): {detail}; create it first"
    if state in ("28000", "28P01") or re.search(
            r"password authentication failed|role \".*\" does not exist|no password supplied"
            r"|authentication failed|no pg_hba.conf entry", text):
        return f"authentication failed ({target}): {detail}"
    if isinstance(exc, psycopg.ProgrammingError) and "invalid" in text.lower():
        return f"invalid connection string {dsn!r}: {detail}"
    return f"cannot reach the PostgreSQL server ({target}): {detail}"


def connect(dsn: str, *, autocommit: bool = True) -> psycopg.Connection:
    """A connection, or :class:`ConnectError` with the reason in one line."""
    kwargs: dict = {"application_name": "spark_loader"}
    try:
        if "connect_timeout" not in psycopg.conninfo.conninfo_to_dict(dsn) and not os.environ.get(
                "PGCONNECT_TIMEOUT"):
            kwargs["connect_timeout"] = 10
        return psycopg.connect(dsn, autocommit=autocommit, **kwargs)
    except psycopg.Error as exc:
        raise ConnectError(explain_connect_error(dsn, exc)) from None


def executor_dsn(conn: psycopg.Connection, dsn: str) -> str:
    """The DSN for Spark tasks: the user's, with host/port/user/dbname made explicit.

    Executors on other machines do not share the driver's PG* environment; the
    password is not copied (give it in the DSN, or via .pgpass / PGPASSWORD on the
    executors).
    """
    info = conn.info
    explicit = {"host": info.host, "port": str(info.port), "user": info.user,
                "dbname": info.dbname}
    return psycopg.conninfo.make_conninfo(dsn, **explicit)


# --------------------------------------------------------------------------- planning

@dataclass
class Existing:
    """What is in the database under a target table's name."""

    relkind: str
    columns: tuple[tuple[str, str], ...]
    marker: dict | None


@dataclass
class Plan:
    """The decision for one table: ``load``, ``replace`` or ``skip``."""

    spec: TableSpec
    action: str
    reason: str
    existing: Existing | None
    run: str = ""
    staging: str = ""
    ledger: str = ""
    sorted_name: str = ""


def parse_marker(comment: str | None) -> dict | None:
    if not comment or not comment.startswith(MARKER_PREFIX):
        return None
    try:
        marker = json.loads(comment[len(MARKER_PREFIX):])
    except ValueError:
        return None
    return marker if isinstance(marker, dict) and "params" in marker else None


def schema_exists(conn: psycopg.Connection, schema: str) -> bool:
    return conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                        (schema,)).fetchone() is not None


def inspect(conn: psycopg.Connection, schema: str, names: list[str]) -> dict[str, Existing]:
    """The relations named ``names`` in ``schema``: kind, columns and marker."""
    rows = conn.execute(
        """
        SELECT c.relname, c.relkind::text, obj_description(c.oid, 'pg_class'),
               coalesce(array_agg(a.attname::text ORDER BY a.attnum)
                        FILTER (WHERE a.attnum IS NOT NULL), '{}'),
               coalesce(array_agg(format_type(a.atttypid, a.atttypmod) ORDER BY a.attnum)
                        FILTER (WHERE a.attnum IS NOT NULL), '{}')
          FROM pg_class c
          JOIN pg_namespace n ON n.oid = c.relnamespace
          LEFT JOIN pg_attribute a
                 ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
         WHERE n.nspname = %s AND c.relname = ANY(%s)
         GROUP BY c.oid, c.relname, c.relkind
        """,
        (schema, names),
    ).fetchall()
    return {name: Existing(kind, tuple(zip(cols, types, strict=True)), parse_marker(comment))
            for name, kind, comment, cols, types in rows}


def plan_tables(conn: psycopg.Connection, schema: str, specs: list[TableSpec],
                force: bool, run: str) -> list[Plan]:
    """Decide what to do with every table; :class:`ConflictError` lists every refusal.

    ``run`` (a short random id) names this run's staging tables."""
    existing = inspect(conn, schema, [s.name for s in specs])
    plans, conflicts = [], []
    kinds = {"v": "a view", "m": "a materialized view", "p": "a partitioned table",
             "f": "a foreign table", "S": "a sequence", "i": "an index", "c": "a type"}
    for spec in specs:
        old = existing.get(spec.name)
        qualified = f"{schema}.{spec.name}"
        if old is None:
            plans.append(Plan(spec, "load", "new", None))
            continue
        if old.relkind != "r":
            conflicts.append(f"{qualified} exists and is {kinds.get(old.relkind, 'not a table')}"
                             "; spark_loader only replaces ordinary tables (drop it yourself)")
            continue
        same_schema = old.columns == spec.columns
        ours = old.marker is not None
        if same_schema and old.marker is not None and old.marker["params"] == spec.marker_params():
            if force:
                plans.append(Plan(spec, "replace", "--force", old))
            else:
                plans.append(Plan(spec, "skip", "up to date", old))
        elif same_schema and ours:
            plans.append(Plan(spec, "replace", "other parameters", old))
        elif force:
            plans.append(Plan(spec, "replace", "--force", old))
        elif not same_schema:
            conflicts.append(f"{qualified} exists with another schema "
                             f"({describe_columns(old.columns)}); use --force to replace it")
        else:
            conflicts.append(f"{qualified} exists and was not created by spark_loader; "
                             "use --force to replace it")
    if conflicts:
        raise ConflictError("nothing was changed:\n  " + "\n  ".join(conflicts))
    for plan in plans:
        plan.run = run
        plan.staging = derived_name(plan.spec.name, f"sl_{run}")
        plan.ledger = derived_name(plan.spec.name, f"sl_{run}_parts")
        plan.sorted_name = derived_name(plan.spec.name, f"sl_{run}_sorted")
    return plans


def describe_columns(columns: tuple[tuple[str, str], ...], limit: int = 4) -> str:
    shown = ", ".join(f"{n} {t}" for n, t in columns[:limit])
    return shown + (", ..." if len(columns) > limit else "") if columns else "no columns"


# --------------------------------------------------------------------------- staging

def _create_table(conn: psycopg.Connection, schema: str, name: str, spec: TableSpec) -> None:
    cols = sql.SQL(", ").join(
        sql.SQL("{} {} NOT NULL").format(sql.Identifier(c), sql.SQL(t)) for c, t in spec.columns)
    conn.execute(sql.SQL("CREATE TABLE {} ({}) WITH (autovacuum_enabled = false)").format(
        sql.Identifier(schema, name), cols))


def staging_comment(schema: str, plan: Plan) -> str:
    """The comment that marks a staging table of ``plan``'s table (any run)."""
    return f"spark_loader staging of {schema}.{plan.spec.name}"


def drop_staging(conn: psycopg.Connection, schema: str, plans: list[Plan],
                 leftovers: bool = False) -> None:
    """Drop this run's staging tables for ``plans``; with ``leftovers``, also those that
    interrupted earlier runs left for the same tables."""
    names = [n for p in plans for n in (p.staging, p.ledger, p.sorted_name) if n]
    if leftovers:
        names += [r[0] for r in conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r' "
            "AND obj_description(c.oid, 'pg_class') = ANY(%s)",
            (schema, [staging_comment(schema, p) for p in plans]))]
    if names:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
            sql.SQL(", ").join(sql.Identifier(schema, n) for n in dict.fromkeys(names))))


def create_staging(conn: psycopg.Connection, schema: str, plans: list[Plan]) -> None:
    """Empty staging and ledger tables for every plan, in one transaction."""
    with conn.transaction():
        drop_staging(conn, schema, plans, leftovers=True)
        for plan in plans:
            _create_table(conn, schema, plan.staging, plan.spec)
            conn.execute(sql.SQL(
                "CREATE TABLE {} (part integer PRIMARY KEY, rows bigint NOT NULL, "
                "nbytes bigint NOT NULL, crc bigint NOT NULL)").format(
                    sql.Identifier(schema, plan.ledger)))
            for name in (plan.staging, plan.ledger):
                _mark_staging(conn, schema, name, plan)


def _mark_staging(conn: psycopg.Connection, schema: str, name: str, plan: Plan) -> None:
    conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
        sql.Identifier(schema, name), sql.Literal(staging_comment(schema, plan))))


def ledger_progress(conn: psycopg.Connection, schema: str,
                    plans: list[Plan]) -> dict[str, tuple[int, int]]:
    """Per table, (parts committed, rows committed) so far."""
    if not plans:
        return {}
    query = sql.SQL(" UNION ALL ").join(
        sql.SQL("SELECT {}::text, count(*), coalesce(sum(rows), 0) FROM {}").format(
            sql.Literal(p.spec.name), sql.Identifier(schema, p.ledger)) for p in plans)
    return {name: (int(parts), int(rows)) for name, parts, rows in conn.execute(query)}


# --------------------------------------------------------------------------- finishing

@dataclass
class Finished:
    """A table that was swapped in."""

    rows: int
    checksum: str
    seconds: dict[str, float]


def build_indexes(conn: psycopg.Connection, dsn: str, builds: list[sql.Composed],
                  maintenance_work_mem: str) -> None:
    """Run the ``CREATE INDEX`` statements ``builds`` on one table, all at once.

    ``CREATE INDEX`` takes a SHARE lock, which does not conflict with itself, so the
    builds of one table can run side by side, each in its own session (the first on
    ``conn``).  Several serial builds at once use the cores better than the same
    builds one after the other with parallel workers each (measured on 2 cores:
    lineitem's three indexes at SF 1 in 4.1-4.6 s against 5.1 s), and they share the
    reading of the table through the buffer cache.  A lone build keeps the server's
    parallel maintenance workers.  Every build runs to its end; then the first error
    (in statement order) is raised."""
    if len(builds) == 1:
        conn.execute(builds[0])
        return
    from concurrent.futures import ThreadPoolExecutor

    def build_on(c: psycopg.Connection, statement: sql.Composed) -> None:
        c.execute(sql.SQL("SET maintenance_work_mem = {}").format(
            sql.Literal(maintenance_work_mem)))
        c.execute("SET max_parallel_maintenance_workers = 0")
        try:
            c.execute(statement)
        finally:
            c.execute("RESET max_parallel_maintenance_workers")

    def build_elsewhere(statement: sql.Composed) -> None:
        with connect(dsn) as other:
            build_on(other, statement)

    with ThreadPoolExecutor(max_workers=len(builds),
                            thread_name_prefix="spark_loader-index") as pool:
        futures = [pool.submit(build_on, conn, builds[0])]
        futures += [pool.submit(build_elsewhere, b) for b in builds[1:]]
    for future in futures:
        future.result()


def finish_table(conn: psycopg.Connection, schema: str, plan: Plan, expected_parts: int,
                 maintenance_work_mem: str, say: Callable[[str], None],
                 dsn: str) -> Finished:
    """Ledger check, ordering, keys, indexes, ANALYZE and the swap of one table.

    ``dsn``: for the extra sessions that build the indexes side by side."""
    spec = plan.spec

    def ident(name: str) -> sql.Identifier:
        return sql.Identifier(schema, name)

    def cols(names: tuple[str, ...]) -> sql.Composed:
        return sql.SQL(", ").join(map(sql.Identifier, names))

    times: dict[str, float] = {}
    conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(
        sql.Literal(maintenance_work_mem)))

    ledger = conn.execute(sql.SQL("SELECT rows, nbytes, crc FROM {} ORDER BY part").format(
        ident(plan.ledger))).fetchall()
    if len(ledger) != expected_parts:
        raise LoaderError(f"{spec.name}: only {len(ledger)} of {expected_parts} parts "
                          "were loaded")
    rows = sum(r for r, _, _ in ledger)
    checksum = f"{combine_parts((crc, n) for _, n, crc in ledger):08x}"
    staging = plan.staging

    if spec.order_by:
        # CREATE TABLE AS appends strictly in order (it bypasses the free space map, which
        # INSERT ... SELECT would use to put later small rows into earlier pages)
        t0 = time.monotonic()
        conn.execute(sql.SQL("SET work_mem = {}").format(sql.Literal(maintenance_work_mem)))
        order = (*spec.order_by, *(c for c in spec.primary_key if c not in spec.order_by))
        with conn.transaction():
            conn.execute(sql.SQL(
                "CREATE TABLE {} WITH (autovacuum_enabled = false) AS "
                "SELECT * FROM {} ORDER BY {}").format(
                    ident(plan.sorted_name), ident(staging), cols(order)))
            conn.execute(sql.SQL("ALTER TABLE {} {}").format(
                ident(plan.sorted_name), sql.SQL(", ").join(
                    sql.SQL("ALTER COLUMN {} SET NOT NULL").format(sql.Identifier(c))
                    for c in spec.column_names)))
            _mark_staging(conn, schema, plan.sorted_name, plan)
            conn.execute(sql.SQL("DROP TABLE {}").format(ident(staging)))
        staging = plan.sorted_name
        times["order"] = time.monotonic() - t0
        say(f"{spec.name}: ordered by {', '.join(spec.order_by)} "
            f"({times['order']:.1f} s)")

    t0 = time.monotonic()
    renames = []                                  # (temporary name, final name)
    pk_tmp = derived_name(spec.name, f"sl_{plan.run}_pkey")
    builds = [sql.SQL("CREATE UNIQUE INDEX {} ON {} ({})").format(
        sql.Identifier(pk_tmp), ident(staging), cols(spec.primary_key))]
    renames.append((pk_tmp, derived_name(spec.name, "pkey", sep="_")))
    for i, index_cols in enumerate(spec.indexes):
        tmp = derived_name(spec.name, f"sl_{plan.run}_idx{i}")
        builds.append(sql.SQL("CREATE INDEX {} ON {} ({})").format(
            sql.Identifier(tmp), ident(staging), cols(index_cols)))
        renames.append((tmp, index_name(spec.name, index_cols)))
    build_indexes(conn, dsn, builds, maintenance_work_mem)
    # the unique index becomes the primary key without another scan: the columns are
    # NOT NULL already
    conn.execute(sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} PRIMARY KEY USING INDEX {}").format(
        ident(staging), sql.Identifier(pk_tmp), sql.Identifier(pk_tmp)))
    times["indexes"] = time.monotonic() - t0

    t0 = time.monotonic()
    conn.execute(sql.SQL("ANALYZE {}").format(ident(staging)))
    times["analyze"] = time.monotonic() - t0

    marker = {
        "v": MARKER_VERSION, "params": spec.marker_params(), "rows": rows,
        "checksum": checksum,
        "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    t0 = time.monotonic()
    with conn.transaction():
        if plan.existing is not None:
            conn.execute(sql.SQL("DROP TABLE {}").format(ident(spec.name)))
        conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(
            ident(staging), sql.Identifier(spec.name)))
        for tmp, final in renames:
            conn.execute(sql.SQL("ALTER INDEX {} RENAME TO {}").format(
                ident(tmp), sql.Identifier(final)))
        conn.execute(sql.SQL("ALTER TABLE {} RESET (autovacuum_enabled)").format(
            ident(spec.name)))
        conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
            ident(spec.name), sql.Literal(MARKER_PREFIX + json.dumps(marker, sort_keys=True))))
        conn.execute(sql.SQL("DROP TABLE {}").format(ident(plan.ledger)))
    times["swap"] = time.monotonic() - t0
    return Finished(rows, checksum, times)
