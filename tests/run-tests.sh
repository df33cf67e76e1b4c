#!/usr/bin/env bash
# tests/run-tests.sh: run every test against throwaway servers (called by `make test`).
#
#  0. lint: ruff and mypy (configured in pyproject.toml);
#  1. pg_regress golden tests (make -C extension installcheck) against a server
#     started here with eddy preloaded;
#  2. PostgreSQL's own regression suite, eddy on vs off (tests/pgregress/run.sh,
#     which starts its own throwaway instances; PGREGRESS=0 skips it), then
#     again with hybrid joins forced (eddy.join_method = hybrid) vs off;
#  3. sqlsmith's random queries against PostgreSQL's regression database with
#     eddies forced on (tests/sqlsmith/run.sh, its own throwaway server; about
#     half a minute to fill the database, then SQLSMITH_QUERIES (3000) queries
#     or SQLSMITH_SECONDS (60) seconds; SQLSMITH=0 skips it), then again with
#     hybrid joins forced for SQLSMITH_HYBRID_SECONDS (30);
#  4. pytest, whose session fixture starts its own server (pytest-postgresql):
#     the script's arguments go to pytest, so `tests/run-tests.sh tests/test_x.py`
#     runs that file alone; with none, pyproject.toml's testpaths (tests/).
#
# Ports: EDDY_TEST_PORT=N runs the servers on N .. N+4 (pg_regress, the two
# regression suite instances, sqlsmith, pytest); by default a random base.
#
# PostgreSQL refuses to run as root: when run as root, the servers and pytest
# run as the unprivileged OS user $PG_OS_USER (default postgres).
set -uo pipefail

cd "$(dirname "$0")/.."
top=$(pwd)
VENV=${VENV:-$top/.venv}
PG_OS_USER=${PG_OS_USER:-postgres}
export PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}

work=$(mktemp -d /tmp/eddy-test.XXXXXX)
chmod 755 "$work"
port=${EDDY_TEST_PORT:-$((20000 + RANDOM % 20000))}
pytest_port=()
[ -n "${EDDY_TEST_PORT:-}" ] && pytest_port=(--postgresql-port="$((port + 4))")
cleanup() {
    tests/pgserver.sh stop "$work/regress" || true
    rm -rf "$work"
}
trap cleanup EXIT

as_test_user() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$PG_OS_USER" -- "$@"
    else
        "$@"
    fi
}

# The test user must be able to read the checkout (and traverse its parents).
if [ "$(id -u)" -eq 0 ]; then
    d=$top
    while [ "$d" != "/" ]; do
        if ! runuser -u "$PG_OS_USER" -- test -x "$d"; then chmod o+x "$d"; fi
        d=$(dirname "$d")
    done
    if ! runuser -u "$PG_OS_USER" -- test -r "$top/pyproject.toml"; then
        chmod -R o+rX "$top"
    fi
fi

status=0

# ruff (the rules selected in pyproject.toml) and mypy (its [tool.mypy] files)
# over python/eddytools, spark_loader and tests; any finding fails the run.
echo "== lint"
if ! RUFF_CACHE_DIR="$work/ruff-cache" "$VENV/bin/ruff" check .; then
    status=1
fi
if ! "$VENV/bin/mypy" --cache-dir "$work/mypy-cache"; then
    status=1
fi

echo "== pg_regress (installcheck)"
tests/pgserver.sh start "$work/regress" "$port" || exit 1
if ! PGHOST="$work/regress" PGPORT="$port" PGUSER=postgres \
    make -C extension installcheck PG_CONFIG="${PG_CONFIG:-$PG_BINDIR/pg_config}"; then
    status=1
    [ -f extension/regression.diffs ] && cat extension/regression.diffs
fi
tests/pgserver.sh stop "$work/regress"

if [ "${PGREGRESS:-1}" != 0 ]; then
    echo "== PostgreSQL regression suite, eddy on vs off"
    if ! PGREGRESS_WORK="$work/pgregress" PGREGRESS_PORT="${PGREGRESS_PORT:-$((port + 1))}" \
        tests/pgregress/run.sh; then
        status=1
    fi
    # once more with every edge that can be a hybrid index/hash join made one
    echo "== PostgreSQL regression suite, hybrid joins forced (eddy.join_method = hybrid) vs off"
    if ! PGREGRESS_WORK="$work/pgregress-hybrid" PGREGRESS_PORT="${PGREGRESS_PORT:-$((port + 1))}" \
        PGREGRESS_EDDY_CONF="eddy.join_method = hybrid" tests/pgregress/run.sh; then
        status=1
    fi
fi

# run_sqlsmith NAME SECONDS SETTINGS: one run of tests/sqlsmith/run.sh
run_sqlsmith() {
    local name=$1 secs=$2 settings=$3 t0=$SECONDS
    if ! SQLSMITH_WORK="$work/$name" SQLSMITH_PORT="${SQLSMITH_PORT:-$((port + 3))}" \
        SQLSMITH_QUERIES="${SQLSMITH_QUERIES:-3000}" SQLSMITH_SECONDS="$secs" \
        SQLSMITH_SETTINGS="$settings" SQLSMITH_KEEP=0 tests/sqlsmith/run.sh; then
        status=1
        # keep the report, the server log and sqlsmith's output ($work goes)
        kept=/tmp/eddy-$name-failed.$$
        mkdir -p "$kept" && cp -r "$work/$name/report.txt" "$work/$name/report.json" \
            "$work/$name/server/server.log" "$work/$name/run" "$kept/" 2>/dev/null
        echo "sqlsmith: report, server log and sqlsmith's output kept in $kept"
    fi
    echo "sqlsmith: step took $((SECONDS - t0))s"
}
if [ "${SQLSMITH:-1}" != 0 ]; then
    echo "== sqlsmith: random queries on the regression database, eddies forced on"
    run_sqlsmith sqlsmith "${SQLSMITH_SECONDS:-60}" "${SQLSMITH_SETTINGS:-}"
    echo "== sqlsmith: the same with hybrid joins forced (eddy.join_method = hybrid)"
    run_sqlsmith sqlsmith-hybrid "${SQLSMITH_HYBRID_SECONDS:-30}" "eddy.join_method=hybrid"
fi

echo "== pytest"
mkdir -p "$work/home"
[ "$(id -u)" -eq 0 ] && chown "$PG_OS_USER" "$work/home"
as_test_user env HOME="$work/home" PYTHONDONTWRITEBYTECODE=1 TMPDIR=/tmp \
    PG_BINDIR="$PG_BINDIR" \
    "$VENV/bin/python" -m pytest -p no:cacheprovider -ra "${pytest_port[@]}" "$@"
rc=$?
if [ $rc -ne 0 ]; then status=1; fi

exit $status
