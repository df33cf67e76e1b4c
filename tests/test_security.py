"""Security under eddies, tested as a non-superuser role created by the test.

- Row-level security (permissive and restrictive policies, a policy calling
  a leaky function), security-barrier views, column privileges and SECURITY
  DEFINER functions give the same rows and the same errors with eddy.enabled
  on and off, over selection and join eddies (asserted to be in the plan).
- A leaky function in the query (RAISE NOTICE, very low COST, routed as a
  selection operator with eddy.selection_min_cost = 0) never sees a row
  that the policies or the barrier hide: every notice it raises names a
  visible row.  The policy function's own notices are the same with and
  without the eddy (the security quals stay on the scan, in PostgreSQL's
  order).
- No setting lets one user harm another's sessions: every eddy.* setting is
  PGC_USERSET (context "user": the user's own session only; the set of
  settings is pinned here so that a new one gets reviewed), a non-superuser
  cannot change them for anybody else (ALTER SYSTEM, ALTER ROLE, ALTER
  DATABASE), eddy.max_memory cannot go beyond what work_mem already allows
  every user, and delay() honours statement_timeout and cancel and holds
  no lock that would stall another session.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import psycopg
import pytest

from eddytools.db import connect, eddy_nodes, explain_json, set_gucs, sql_value

EDDY_SETTINGS = {
    "eddy.enabled", "eddy.reopt_frequency", "eddy.routing_policy", "eddy.lottery_window",
    "eddy.selection_min_cost", "eddy.join_method", "eddy.max_sources", "eddy.max_memory",
    "eddy.static_shj", "eddy.source_schedule", "eddy.source_rates", "eddy.source_delays",
    "eddy.migration", "eddy.debug_migrate_every", "eddy.state_mode", "eddy.routing_hold",
    "eddy.debug_spill_after", "eddy.parallel_exchange", "eddy.filter_before_store",
    "eddy.hybrid_route", "eddy.debug_index_delay", "eddy.random_start",
    "eddy.hybrid_cache", "eddy.index_cache", "eddy.rank_lookahead", "eddy.one_row_guard",
    "eddy.hot_keys",
}

SCHEMA = """
CREATE TABLE accounts AS
SELECT g AS id, (ARRAY['alice', 'bob', 'carol'])[g % 3 + 1] AS owner,
       (g * 37) % 1000 AS balance, 'S' || g AS secret
FROM generate_series(1, 3000) g;
CREATE TABLE branches AS
SELECT g AS id, CASE WHEN g % 10 = 0 THEN 'Hidden' ELSE 'City' || (g % 17) END AS city
FROM generate_series(0, 299) g;
CREATE TABLE plain AS SELECT * FROM accounts;
CREATE TABLE cols AS SELECT * FROM accounts;
CREATE INDEX ON branches (id);
ANALYZE accounts, branches, plain, cols;

-- the leaky function of the attack: very cheap, so that a planner or an eddy
-- that ignores security levels would run it first
CREATE FUNCTION leak(id int, what text) RETURNS bool LANGUAGE plpgsql COST 0.0001 AS
$$ BEGIN RAISE NOTICE 'leak % %', id, what; RETURN true; END $$;
-- a policy's expensive, leaky function (the table owner's: it may see all)
CREATE FUNCTION vetted(id int) RETURNS bool LANGUAGE plpgsql COST 10000 AS
$$ BEGIN RAISE NOTICE 'vetted %', id; RETURN id % 11 <> 0; END $$;

ALTER TABLE accounts ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON accounts FOR SELECT USING (owner = 'alice');
CREATE POLICY also_bob ON accounts FOR SELECT USING (owner = 'bob' AND balance < 100);
CREATE POLICY not_rich ON accounts AS RESTRICTIVE FOR SELECT USING (balance < 900);
CREATE POLICY vet ON accounts AS RESTRICTIVE FOR SELECT USING (vetted(id));
ALTER TABLE branches ENABLE ROW LEVEL SECURITY;
CREATE POLICY visible ON branches FOR SELECT USING (city <> 'Hidden');

-- the barrier's own quals are expensive: the view's block gets an eddy
CREATE VIEW alice_plain WITH (security_barrier) AS
  SELECT id, balance, secret FROM plain
  WHERE owner = 'alice' AND delay(balance, 0) < 500 AND delay(id, 0) % 13 <> 0;

CREATE FUNCTION hush(int) RETURNS bool LANGUAGE sql AS 'SELECT $1 > 0';
REVOKE EXECUTE ON FUNCTION hush(int) FROM PUBLIC;

CREATE FUNCTION definer_count(lim int) RETURNS bigint LANGUAGE sql SECURITY DEFINER
SET search_path = public AS
$$ SELECT count(*) FROM plain p JOIN branches b ON b.id = p.id % 300
   WHERE p.balance < lim AND delay(p.id, 0) >= 0 AND length(b.city) > 4 $$;
"""

GRANTS = """
GRANT SELECT ON accounts, branches TO {u};
GRANT SELECT ON alice_plain TO {u};
GRANT SELECT (id, owner, balance) ON cols TO {u};
REVOKE EXECUTE ON FUNCTION definer_count(int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION definer_count(int) TO {u};
"""

# rows a query may see: (table, id) -> visible
VISIBLE_ACCOUNTS = """SELECT id FROM accounts WHERE
    (owner = 'alice' OR (owner = 'bob' AND balance < 100)) AND balance < 900 AND id % 11 <> 0"""

QUERIES = {
    "rls selection": """SELECT id, balance FROM accounts
        WHERE leak(id, secret) AND delay(balance, 0) >= 0 AND delay(id, 0) <> -1
          AND balance % 7 <> 1""",
    "rls join": """SELECT a.id, b.city FROM accounts a JOIN branches b ON b.id = a.id % 300
        WHERE leak(a.id, a.secret) AND leak(b.id, b.city) AND delay(a.balance, 0) >= 0""",
    "barrier selection": """SELECT id, balance FROM alice_plain
        WHERE leak(id, secret) AND delay(balance, 0) >= 0 AND delay(id, 0) <> -1
          AND balance % 5 <> 2""",
    "barrier join": """SELECT v.id, b.city FROM alice_plain v JOIN branches b ON b.id = v.id % 300
        JOIN accounts a ON a.id = v.id
        WHERE leak(v.id, v.secret) AND delay(b.id, 0) >= 0""",
    "columns granted": """SELECT c.id, c.balance FROM cols c JOIN branches b ON b.id = c.id % 300
        WHERE delay(c.balance, 0) >= 0 AND c.owner <> 'carol'""",
    "definer": "SELECT definer_count(600)",
}

# queries that must fail, the same way with and without the eddy
FAILING = {
    "column not granted": """SELECT id, secret FROM cols
        WHERE delay(balance, 0) >= 0 AND balance % 7 <> 1""",
    "column not granted in a predicate": """SELECT c.id FROM cols c JOIN branches b
        ON b.id = c.id % 300 WHERE c.secret <> 'x' AND delay(c.balance, 0) >= 0""",
    "whole row of a partly granted table": """SELECT c FROM cols c
        WHERE delay(balance, 0) >= 0 AND balance % 7 <> 1""",
    "table not granted": """SELECT count(*) FROM plain p JOIN branches b ON b.id = p.id % 300
        WHERE delay(p.balance, 0) >= 0""",
    "function not granted": """SELECT count(*) FROM accounts a JOIN branches b
        ON b.id = a.id % 300 WHERE leak(a.id, a.secret) AND delay(a.id, 0) >= 0 AND hush(b.id)""",
}


@pytest.fixture
def sec(eddy_conn, pg_dsn):
    """The schema, a login role with the grants above, and a connection as
    that role; the role is dropped afterwards."""
    role = f"eddy_sec_{uuid.uuid4().hex[:8]}"
    eddy_conn.execute(SCHEMA)
    eddy_conn.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
    eddy_conn.execute(GRANTS.format(u=role))
    user_dsn = psycopg.conninfo.make_conninfo(pg_dsn, user=role)
    user = connect(user_dsn)
    user.execute("SET jit = off")
    notices: list[str] = []
    user.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    try:
        yield eddy_conn, user, notices, role, user_dsn, pg_dsn
    finally:
        user.close()
        eddy_conn.execute(f"DROP OWNED BY {role}")
        eddy_conn.execute(f"DROP ROLE {role}")


def _outcome(conn, query: str, notices: list[str]) -> tuple:
    notices.clear()
    try:
        rows = sorted(conn.execute(query).fetchall(), key=repr)
        return ("rows", rows), list(notices)
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary), list(notices)


def _leaked(notices: list[str], kind: str) -> set[int]:
    """The ids the leaky function saw: of accounts (kind "account": the
    secret 'S<id>' was passed) or of branches (kind "branch": a city)."""
    out = set()
    for n in notices:
        if n.startswith("leak "):
            _, ident, what = n.split(" ", 2)
            if (what.startswith("S") and what[1:].isdigit()) == (kind == "account"):
                out.add(int(ident))
    return out


@pytest.mark.parametrize("min_cost", ["0.01", "0"])
@pytest.mark.parametrize("join_method", ["auto", "index"])
def test_same_rows_and_no_leak_as_non_superuser(sec, min_cost, join_method):
    """Every query gives the same rows with and without the eddy; with it,
    the eddy is in the plan, the leaky function only ever sees rows the
    policies and the barrier let through, and the policy function sees the
    rows it sees without the eddy.  With eddy.join_method = index the eddy
    probes branches' index itself, and branches' policy becomes a selection
    that must run before the leaky function."""
    admin, user, notices, role, _, _ = sec
    assert not admin.execute(f"SELECT rolsuper FROM pg_roles WHERE rolname = '{role}'"
                             ).fetchone()[0]
    visible = {r[0] for r in admin.execute(VISIBLE_ACCOUNTS)}
    barrier = {r[0] for r in admin.execute(
        "SELECT id FROM plain WHERE owner = 'alice' AND balance < 500 AND id % 13 <> 0")}
    branches_visible = {r[0] for r in admin.execute(
        "SELECT id FROM branches WHERE city <> 'Hidden'")}
    set_gucs(user, selection_min_cost=min_cost, join_method=join_method)
    for name, query in QUERIES.items():
        set_gucs(user, enabled="off")
        want, notices_off = _outcome(user, query, notices)
        set_gucs(user, enabled="on")
        if name != "definer":
            eddies = eddy_nodes(explain_json(user, query))
            assert eddies, f"{name}: no eddy"
            if name == "rls join" and join_method == "index":
                kinds = [op["Operator Type"] for e in eddies for op in e.get("Operators", [])]
                assert any("Index" in k for k in kinds), kinds
        got, notices_on = _outcome(user, query, notices)
        assert got == want, name
        assert got[0] == "rows" and got[1], f"{name}: {got}"
        leaked = _leaked(notices_on, "account")
        assert _leaked(notices_on, "branch") <= branches_visible, name
        if name.startswith("rls"):
            assert leaked <= visible, (name, sorted(leaked - visible)[:10])
            # the policy's function: the same calls, on the scan as without the eddy
            vetted_on = sorted(n for n in notices_on if n.startswith("vetted"))
            vetted_off = sorted(n for n in notices_off if n.startswith("vetted"))
            assert vetted_on == vetted_off, name
        elif name.startswith("barrier"):
            assert leaked <= barrier, (name, sorted(leaked - barrier)[:10])
        if name in ("rls selection", "barrier selection"):
            # the leak saw something: the check above is not vacuous
            assert leaked, name


def test_same_errors_as_non_superuser(sec):
    """Column privileges (a column outside the grant in the target list, in
    a predicate, a whole-row reference), a table and a function without
    privilege, and RLS with row_security = off: the same SQLSTATE and
    message with and without the eddy, and no row leaks through a notice
    before the error."""
    _, user, notices, _, _, _ = sec
    set_gucs(user, selection_min_cost="0")
    cases = dict(FAILING)
    for name, query in cases.items():
        set_gucs(user, enabled="off")
        want, _ = _outcome(user, query, notices)
        set_gucs(user, enabled="on")
        got, notices_on = _outcome(user, query, notices)
        assert want[0] == "error" and want[1] == "42501", (name, want)
        assert got == want, name
        assert not _leaked(notices_on, "account") and not _leaked(notices_on, "branch"), name
    # row_security = off: an error instead of filtered rows
    user.execute("SET row_security = off")
    for enabled in ("off", "on"):
        set_gucs(user, enabled=enabled)
        got, _ = _outcome(user, QUERIES["rls selection"], notices)
        assert got[0] == "error" and got[1] == "42501", (enabled, got)
        assert "row-level security" in got[2]
    user.execute("RESET row_security")


def test_eddy_settings_are_per_session_only(sec):
    """Every eddy.* setting but the read-only eddy.clock is PGC_USERSET; the
    user may set each to its extreme values for its own session, which
    changes nothing in another session, and cannot change them for others:
    ALTER SYSTEM, ALTER ROLE of another role and ALTER DATABASE are refused.
    eddy.clock (which clock times the cost samples) nobody may set."""
    admin, user, _, role, user_dsn, admin_dsn = sec
    rows = admin.execute("SELECT name, context, min_val, max_val, vartype FROM pg_settings "
                         "WHERE name LIKE 'eddy.%' AND name <> 'eddy.clock' "
                         "ORDER BY name").fetchall()
    assert {r[0] for r in rows} == EDDY_SETTINGS, "a new eddy.* setting: review its context"
    assert all(r[1] == "user" for r in rows), rows
    assert sql_value(admin, "SELECT context FROM pg_settings WHERE name = 'eddy.clock'") == \
        "internal"
    for conn in (user, admin):
        with pytest.raises(psycopg.errors.CantChangeRuntimeParam):
            conn.execute("SET eddy.clock = 'clock_gettime'")

    # the user's own session, every setting at an extreme
    extremes = {"enabled": "off", "reopt_frequency": "1", "routing_policy": "random",
                "lottery_window": "1", "selection_min_cost": "1000", "join_method": "index",
                "max_sources": "2", "max_memory": "64kB", "static_shj": "on",
                "source_schedule": "proportional", "source_rates": "t=1000000",
                "source_delays": "t=1", "migration": "greedy",
                "debug_migrate_every": "1000000", "state_mode": "stems",
                "routing_hold": "t=100", "debug_spill_after": "1",
                "parallel_exchange": "always", "filter_before_store": "off",
                "hybrid_route": "random", "debug_index_delay": "1000000",
                "random_start": "2147483647", "hybrid_cache": "off",
                "index_cache": "on", "rank_lookahead": "off", "one_row_guard": "off",
                "hot_keys": "off"}
    assert {f"eddy.{k}" for k in extremes} == EDDY_SETTINGS
    with connect(user_dsn) as other_session, connect(admin_dsn) as admin_session:
        def shown(conn) -> dict[str, str]:
            return {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in EDDY_SETTINGS}

        before = [shown(other_session), shown(admin_session)]
        set_gucs(user, **extremes)
        assert shown(user)["eddy.routing_policy"] == "random"
        assert [shown(other_session), shown(admin_session)] == before
        assert before[0]["eddy.enabled"] == "on"
        for conn in (other_session, admin_session):
            assert eddy_nodes(explain_json(conn, QUERIES["rls join"]))

    # nobody else's settings: refused for a non-superuser
    for stmt in ("ALTER SYSTEM SET eddy.enabled = off",
                 "ALTER ROLE postgres SET eddy.max_memory = '1kB'",
                 f"ALTER DATABASE {admin.info.dbname} SET eddy.enabled = off"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            user.execute(stmt)
    # its own role's default is its own business (future sessions of that role only)
    user.execute(f"ALTER ROLE {role} SET eddy.reopt_frequency = 7")
    with connect(admin_dsn) as fresh_admin:
        assert sql_value(fresh_admin, "SHOW eddy.reopt_frequency") == "100"


def test_max_memory_gives_no_more_than_work_mem(sec):
    """eddy.max_memory's ceiling is work_mem's: a user who may set work_mem
    (and hash_mem_multiplier) in its session already gets as much for each
    of PostgreSQL's own hash tables, so the eddy's setting grants nothing
    new.  -1, the default, gives each STAIR what one hash join gets."""
    admin, user, _, _, _, _ = sec
    got = dict(admin.execute(
        "SELECT name, max_val::numeric FROM pg_settings WHERE name IN "
        "('eddy.max_memory', 'work_mem')").fetchall())
    assert got["eddy.max_memory"] <= got["work_mem"], got
    contexts = dict(admin.execute(
        "SELECT name, context FROM pg_settings WHERE name IN "
        "('work_mem', 'hash_mem_multiplier', 'eddy.max_memory')").fetchall())
    assert set(contexts.values()) == {"user"}, contexts
    # a non-superuser may set both to their maximum for its own session
    user.execute(f"SET work_mem = {int(got['work_mem'])}")
    user.execute(f"SET eddy.max_memory = {int(got['eddy.max_memory'])}")
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        user.execute(f"SET eddy.max_memory = {int(got['eddy.max_memory']) + 1}")


def test_delay_cannot_stall_other_sessions(sec):
    """A non-superuser's delay() of half an hour inside an eddy: another
    session reads and writes the same table meanwhile; statement_timeout
    stops it within a few seconds, and so does pg_cancel_backend from an
    administrator; another non-superuser may not cancel it."""
    admin, user, _, role, user_dsn, admin_dsn = sec
    admin.execute(f"GRANT INSERT ON accounts TO {role}")
    long_query = "SELECT count(*) FROM accounts WHERE delay(id, 2000000000) >= 0 AND id % 7 <> 1"
    set_gucs(user, selection_min_cost="0")
    assert eddy_nodes(explain_json(user, long_query))

    user.execute("SET statement_timeout = '300ms'")
    start = time.monotonic()
    with pytest.raises(psycopg.errors.QueryCanceled):
        user.execute(long_query)
    assert time.monotonic() - start < 5
    user.execute("RESET statement_timeout")

    outcome: dict[str, Any] = {}
    pid = user.info.backend_pid

    def work() -> None:
        try:
            user.execute(long_query)
            outcome["result"] = "finished"
        except psycopg.Error as e:
            outcome["result"] = e.sqlstate
        outcome["ended"] = time.monotonic()

    th = threading.Thread(target=work)
    th.start()
    try:
        time.sleep(0.5)
        with connect(admin_dsn) as other:
            other.execute("SET lock_timeout = '2s'")
            other.execute("INSERT INTO accounts VALUES (99999, 'dave', 1, 'x')")
            assert sql_value(other, "SELECT count(*) FROM accounts") == 3001
        admin.execute(f"CREATE ROLE {role}_b LOGIN")
        try:
            with connect(psycopg.conninfo.make_conninfo(user_dsn, user=f"{role}_b")) as stranger, \
                    pytest.raises(psycopg.errors.InsufficientPrivilege):
                stranger.execute("SELECT pg_cancel_backend(%s)", (pid,))
        finally:
            admin.execute(f"DROP ROLE {role}_b")
        sent = time.monotonic()
        assert admin.execute("SELECT pg_cancel_backend(%s)", (pid,)).fetchone()[0]
        th.join(30)
    finally:
        if th.is_alive():
            admin.execute("SELECT pg_terminate_backend(%s)", (user.info.backend_pid,))
            th.join()
    assert outcome["result"] == "57014", outcome
    assert outcome["ended"] - sent < 5
    assert user.execute("SELECT 1").fetchone() == (1,)


def test_extreme_settings_are_harmless(sec):
    """A non-superuser's most extreme eddy settings (every routing policy,
    routing recomputed for every tuple, a lottery window of one tuple, every
    predicate routed, 16 sources, forced join methods, a 64 kB memory
    limit, past which the eddy spills) give PostgreSQL's rows, and the
    session goes on."""
    _, user, notices, _, _, _ = sec
    queries = [QUERIES[n] for n in ("rls selection", "rls join", "barrier join",
                                    "columns granted")]
    set_gucs(user, enabled="off")
    want = [_outcome(user, q, notices)[0] for q in queries]
    set_gucs(user, enabled="on", reopt_frequency="1", lottery_window="1",
             selection_min_cost="0", max_sources="16")
    for policy in ("rank", "lottery", "fixed", "random"):
        for method, memory in (("hash", "-1"), ("index", "-1"), ("auto", "64kB")):
            set_gucs(user, routing_policy=policy, join_method=method, max_memory=memory)
            for q, w in zip(queries, want, strict=True):
                got, _ = _outcome(user, q, notices)
                assert got == w, (policy, method, q, got)
    assert user.execute("SELECT 1").fetchone() == (1,)
