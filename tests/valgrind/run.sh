#!/usr/bin/env bash
# tests/valgrind/run.sh: the test suite with the server under valgrind's
# memcheck (called by `make valgrind`).
#
#  1. builds PostgreSQL 15 with USE_VALGRIND, assertions and debug symbols
#     into $VG_PREFIX (once; tests/valgrind/build-postgres.sh);
#  2. builds the assert-enabled extension against it and installs it there
#     (compiled with USE_VALGRIND, so its arenas tell memcheck which bytes
#     are live: stair.h);
#  3. makes $VG_PREFIX/vgbin: pg_ctl and initdb, and a `postgres` that runs
#     the real one under memcheck (bootstrap and single-user mode, which only
#     initdb uses, run without it), each process logging to
#     $VG_OUT/logs/<pid>.log;
#  4. runs the pg_regress tests (installcheck) against such a server, then
#     the pytest tests $VG_PYTEST (a representative subset: valgrind makes
#     the server 20-50 times slower), whose fixture starts its own;
#  5. tests/valgrind/check-logs.py: fails if any memcheck error has a frame
#     in the extension (errors elsewhere are listed; VG_STRICT=1 fails on
#     them too).
#
# Runs as root (servers as $PG_OS_USER, default postgres) or as a user who
# owns $VG_PREFIX.  The test outcome and the memcheck verdict are both
# printed; the exit status is 1 if either failed.
set -uo pipefail

cd "$(dirname "$0")/../.."
top=$(pwd)
VENV=${VENV:-$top/.venv}
VG_PREFIX=${VG_PREFIX:-/opt/pg-valgrind}
VG_OUT=${VG_OUT:-/tmp/eddy-valgrind}
VG_PORT=${VG_PORT:-$((20000 + RANDOM % 20000))}
VG_OPTS=${VG_OPTS:---track-origins=yes}
VG_STRICT=${VG_STRICT:-0}
PG_OS_USER=${PG_OS_USER:-postgres}
# The default pytest subset (VG_PYTEST=none runs none; VG_REGRESS=0 skips
# pg_regress): join eddies (a chunk of generated queries, generic plans,
# cursors, LIMIT, the memory limit's ERROR, cancel, rescans), the 22 TPC-H
# queries, a chunk of generated selections, the rescan memory test and the
# static symmetric hash join (generated joins, memory limit, rescans): about
# 20 minutes on 2 busy cores, pg_regress about 10 more.  Left out for time:
# the Wisconsin shape tests (360 joins each) and the other correlated
# subqueries (the "predicate" one alone took 11 minutes).
VG_PYTEST=${VG_PYTEST:-\
tests/test_join_differential.py::test_generated_join_queries_match_vanilla[0] \
tests/test_join_differential.py::test_prepared_generic_plans_match_vanilla \
tests/test_join_differential.py::test_scroll_cursor_fetches_match_vanilla \
tests/test_join_differential.py::test_limit_stops_join_eddy_early \
tests/test_join_differential.py::test_memory_limit_is_enforced \
tests/test_join_differential.py::test_cancel_from_another_thread_stops_large_join \
tests/test_join_differential.py::test_correlated_subquery_rescans_join_eddy[restriction] \
tests/test_tpch.py::test_tpch_query_matches_vanilla \
tests/test_selection_differential.py::test_generated_selection_queries_match_vanilla[1] \
tests/test_join_memory.py \
tests/test_shj.py::test_generated_joins_match_hash_join[0] \
tests/test_shj.py::test_memory_limit_error_names_setting \
tests/test_shj.py::test_rescans_with_and_without_parameters}
VG_REGRESS=${VG_REGRESS:-1}

as_pg() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u "$PG_OS_USER" -- "$@"; else "$@"; fi
}

tests/valgrind/build-postgres.sh "$VG_PREFIX" || exit 1
PG_CONFIG=$VG_PREFIX/bin/pg_config
VGBIN=$VG_PREFIX/vgbin
case "$("$PG_CONFIG" --pkglibdir)" in
"$VG_PREFIX"/*) ;;
*) echo "valgrind: $PG_CONFIG installs modules outside $VG_PREFIX" >&2; exit 1 ;;
esac

echo "== extension (assert-enabled) against $VG_PREFIX"
make -s -C extension clean PG_CONFIG="$PG_CONFIG"
make -s -C extension install EDDY_ASSERT=1 PG_CONFIG="$PG_CONFIG" || exit 1
make -s -C extension clean PG_CONFIG="$PG_CONFIG"

rm -rf "$VG_OUT"
mkdir -p "$VG_OUT/logs" "$VG_OUT/home"
chmod 755 "$VG_OUT"
[ "$(id -u)" -eq 0 ] && chown -R "$PG_OS_USER" "$VG_OUT"
logs=$VG_OUT/logs

# pg_ctl and initdb find `postgres` next to themselves (copies, not symlinks,
# which they would resolve), and the share directory at ../share.
mkdir -p "$VGBIN"
cp "$VG_PREFIX/bin/pg_ctl" "$VG_PREFIX/bin/initdb" "$VGBIN/"
cp "$VG_PREFIX/bin/pg_config" "$VG_PREFIX/bin/psql" "$VGBIN/"
cat >"$VGBIN/postgres" <<EOF
#!/bin/sh
# postgres under memcheck (written by tests/valgrind/run.sh)
case "\$1" in
--boot|--single|-V|--version|-C|--describe-config|--check)
    exec "$VG_PREFIX/bin/postgres" "\$@" ;;
esac
exec valgrind --tool=memcheck --trace-children=yes --num-callers=40 \\
    --suppressions="$VG_PREFIX/valgrind.supp" --leak-check=no --fullpath-after= \\
    --error-markers=VALGRINDERROR-BEGIN,VALGRINDERROR-END $VG_OPTS \\
    --log-file="$logs/%p.log" "$VG_PREFIX/bin/postgres" "\$@"
EOF
chmod 755 "$VGBIN/postgres"

# The test user must be able to read the checkout (and traverse its parents).
if [ "$(id -u)" -eq 0 ]; then
    d=$top
    while [ "$d" != "/" ]; do
        runuser -u "$PG_OS_USER" -- test -x "$d" || chmod o+x "$d"
        d=$(dirname "$d")
    done
    runuser -u "$PG_OS_USER" -- test -r "$top/pyproject.toml" || chmod -R o+rX "$top"
fi

status=0
start=$(date +%s)
srv=$VG_OUT/regress
cleanup() { PG_BINDIR=$VGBIN tests/pgserver.sh stop "$srv" 2>/dev/null || true; }
trap cleanup EXIT

if [ "$VG_REGRESS" = 1 ]; then
    echo "== pg_regress (installcheck) under memcheck"
    PG_BINDIR=$VGBIN tests/pgserver.sh start "$srv" "$VG_PORT" || exit 1
    if ! PGHOST="$srv" PGPORT="$VG_PORT" PGUSER=postgres \
        make -C extension installcheck PG_CONFIG="$PG_CONFIG"; then
        status=1
        [ -f extension/regression.diffs ] && cat extension/regression.diffs
    fi
    PG_BINDIR=$VGBIN tests/pgserver.sh stop "$srv"
    echo "valgrind: pg_regress took $(( $(date +%s) - start )) s"
fi

if [ "$VG_PYTEST" != none ]; then
    echo "== pytest under memcheck"
    t=$(date +%s)
    # shellcheck disable=SC2086
    as_pg env HOME="$VG_OUT/home" PYTHONDONTWRITEBYTECODE=1 TMPDIR=/tmp PG_BINDIR="$VGBIN" \
        "$VENV/bin/python" -m pytest -p no:cacheprovider -ra --durations=20 "$@" $VG_PYTEST ||
        status=1
    echo "valgrind: pytest took $(( $(date +%s) - t )) s"
fi

echo "== memcheck's verdict (logs in $logs)"
strict=()
[ "$VG_STRICT" = 1 ] && strict=(--strict)
tests/valgrind/check-logs.py "$logs" "$top/extension/src" "${strict[@]}" |
    tee "$VG_OUT/summary.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
echo "valgrind: total $(( $(date +%s) - start )) s; summary in $VG_OUT/summary.txt"
exit $status
