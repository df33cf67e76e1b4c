#!/usr/bin/env bash
# tests/sqlsmith/run.sh: random queries (sqlsmith) against PostgreSQL's
# regression database, with every eddy the extension can build forced on.
#
#   tests/sqlsmith/run.sh
#
# 1. Starts a server with eddy preloaded (tests/pgserver.sh) in
#    $SQLSMITH_WORK/server and fills its database `regression` by running
#    PostgreSQL 15's regression schedule against it once (pg_regress
#    --use-existing; the diffs against PostgreSQL's expected files do not
#    matter, only the objects the tests leave behind).  When the server
#    directory is kept (SQLSMITH_KEEP=1, as `make sqlsmith` does), later runs
#    reuse that database and skip this step.
# 2. Runs sqlsmith (Debian package `sqlsmith`) as the unprivileged role
#    sqlsmith (pg_read_all_data: it reads every table, but cannot call
#    superuser functions such as pg_terminate_backend or lo_import; sqlsmith
#    runs each statement in a transaction it rolls back), whose settings in
#    that database force eddies:
#        eddy.enabled = on, eddy.selection_min_cost = 0, eddy.max_sources = 16,
#        eddy.routing_policy = random, eddy.reopt_frequency = 1
#    until SQLSMITH_QUERIES queries are generated or SQLSMITH_SECONDS pass.
# 3. tests/sqlsmith/check.py reads the server log written during the run
#    (log_line_prefix carries the SQLSTATE and the application name) and
#    fails on
#      - a crash or an assertion failure ("terminated by signal", "PANIC",
#        "TRAP:"),
#      - an ERROR of SQLSTATE XX000 (internal error) or whose message
#        mentions eddy, unless the statement raises the same error with
#        eddy.enabled = off (then it is PostgreSQL's own; it is listed), or
#        the error comes (log_error_verbosity = verbose: LOCATION) from a
#        function of PostgreSQL's that the statement calls by name and that
#        raises for its arguments, such as test_fdw_handler(): an eddy reads
#        all its sources, so it may call a function PostgreSQL's plan skips
#        (behind a false one-time filter, an empty relation, a LIMIT); listed;
#    every other error (most of sqlsmith's queries fail in PostgreSQL alone:
#    casts, operators that do not exist, division by zero, the 1 s statement
#    timeout sqlsmith sets) is counted by SQLSTATE.  It also EXPLAINs the first
#    SQLSMITH_EXPLAIN generated queries under the same settings and reports
#    how many plans have an Eddy.
#
# Environment: PG_BINDIR, PG_CONFIG, PG_OS_USER (default postgres),
# SQLSMITH_WORK (default /var/tmp/eddy-sqlsmith), SQLSMITH_PORT (default 26200),
# SQLSMITH_QUERIES (default 2000), SQLSMITH_SECONDS (default 90; 0 = no cap),
# SQLSMITH_SEED (default 1), SQLSMITH_EXPLAIN (default 300),
# SQLSMITH_KEEP (1: keep the server directory and its regression database),
# SQLSMITH_OPTS (more sqlsmith options; default --exclude-catalog),
# SQLSMITH_SETTINGS (more settings for sqlsmith's role, "name=value,...": e.g.
# parallel plans forced, "parallel_setup_cost=0,parallel_tuple_cost=0,
# min_parallel_table_scan_size=0,max_parallel_workers_per_gather=2"),
# PGREGRESS_SRC / PGREGRESS_SRC_CACHE (the PostgreSQL source package, as for
# tests/pgregress/run.sh, which fetches it the same way).
# Report: $SQLSMITH_WORK/report.txt and report.json.
set -uo pipefail

main() {
cd "$(dirname "$0")/../.."
top=$(pwd)
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
PG_CONFIG=${PG_CONFIG:-$PG_BINDIR/pg_config}
PG_OS_USER=${PG_OS_USER:-postgres}
export PG_BINDIR PG_CONFIG PG_OS_USER
WORK=${SQLSMITH_WORK:-/var/tmp/eddy-sqlsmith}
PORT=${SQLSMITH_PORT:-26200}
QUERIES=${SQLSMITH_QUERIES:-2000}
SECONDS_CAP=${SQLSMITH_SECONDS:-90}
SEED=${SQLSMITH_SEED:-1}
EXPLAIN_N=${SQLSMITH_EXPLAIN:-300}
KEEP=${SQLSMITH_KEEP:-0}
OPTS=${SQLSMITH_OPTS---exclude-catalog}
server=$WORK/server
role=sqlsmith

die() { echo "sqlsmith: $*" >&2; exit 1; }
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u "$PG_OS_USER" -- "$@"; else "$@"; fi
}
psql_su() { PGOPTIONS='-c client_min_messages=warning' "$PG_BINDIR/psql" -h "$server" -p "$PORT" -U postgres -X -q -v ON_ERROR_STOP=1 "$@"; }

command -v sqlsmith >/dev/null 2>&1 || die "sqlsmith is not installed (apt-get install sqlsmith; make sysdeps does)"
test -f "$("$PG_CONFIG" --pkglibdir)/eddy.so" ||
    die "eddy.so is not installed in $("$PG_CONFIG" --pkglibdir)"
mkdir -p "$WORK" || die "cannot create $WORK"
if [ "$KEEP" != 1 ]; then
    tests/pgserver.sh stop "$server" 2>/dev/null
    rm -rf "$server"
fi

# --- the source package (for the schedule and regress.so) -----------------------
# shellcheck source=tests/pgsrc.sh
. "$(dirname "$0")/../pgsrc.sh"
pg_source
regress_src=$PGREGRESS_SRC/src/test/regress

# --- the server and its regression database ------------------------------------
trap 'tests/pgserver.sh stop "$server"' EXIT
tests/pgserver.sh start "$server" "$PORT" || die "cannot start the server"
ready=$server/data/eddy-regression-ready
if [ ! -f "$ready" ]; then
    lib=$WORK/lib
    build_regress_libs "$lib"
    pg_regress=$(dirname "$("$PG_CONFIG" --pgxs)")/../test/regress/pg_regress
    [ -x "$pg_regress" ] || die "pg_regress not found at $pg_regress"
    out=$WORK/setup
    rm -rf "$out"
    mkdir -p "$out"
    if [ "$(id -u)" -eq 0 ]; then
        chown -R "$PG_OS_USER" "$WORK"
        d=$top
        while [ "$d" != "/" ]; do
            runuser -u "$PG_OS_USER" -- test -x "$d" || chmod o+x "$d"
            d=$(dirname "$d")
        done
    fi
    # What pg_regress does itself with a temp instance (--use-existing does not
    # create the database).
    psql_su -d postgres \
        -c "DROP DATABASE IF EXISTS regression" \
        -c "CREATE DATABASE regression TEMPLATE template0" \
        -c "ALTER DATABASE regression SET lc_messages TO 'C'" \
        -c "ALTER DATABASE regression SET lc_monetary TO 'C'" \
        -c "ALTER DATABASE regression SET lc_numeric TO 'C'" \
        -c "ALTER DATABASE regression SET lc_time TO 'C'" \
        -c "ALTER DATABASE regression SET bytea_output TO 'hex'" \
        -c "ALTER DATABASE regression SET timezone_abbreviations TO 'Default'" ||
        die "cannot create the regression database"
    t0=$SECONDS
    (cd "$out" && as_pg "$pg_regress" --use-existing --host="$server" --port="$PORT" \
        --user=postgres --bindir="$PG_BINDIR" --dlpath="$lib" \
        --inputdir="$regress_src" --outputdir="$out" \
        --schedule="$regress_src/parallel_schedule" >"$out/pg_regress.log" 2>&1)
    ran=$(grep -cE '^(test| +) [a-z0-9_.]+ +\.\.\. ' "$out/pg_regress.log")
    echo "sqlsmith: regression database filled by the schedule's $ran tests in $((SECONDS - t0))s (log in $out)"
    [ "$ran" -gt 200 ] || { tail -20 "$out/pg_regress.log"; die "the regression schedule did not run"; }
    touch "$ready"
fi

# --- settings --------------------------------------------------------------------
role_settings=""
IFS=',' read -r -a extra_settings <<<"${SQLSMITH_SETTINGS:-}"
for kv in "${extra_settings[@]}"; do
    [ -n "$kv" ] || continue
    case $kv in
    *=*) ;;
    *) die "SQLSMITH_SETTINGS: \"$kv\" is not name=value" ;;
    esac
    role_settings+="ALTER ROLE $role IN DATABASE regression SET ${kv%%=*} = '${kv#*=}';"$'\n'
done
psql_su -d regression >/dev/null <<SQL || die "cannot set up the regression database"
DROP EXTENSION IF EXISTS eddy CASCADE;
CREATE EXTENSION eddy;
DO \$\$BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$role') THEN
    CREATE ROLE $role LOGIN;
  END IF;
END\$\$;
GRANT pg_read_all_data TO $role;
ALTER ROLE $role IN DATABASE regression SET eddy.enabled = on;
ALTER ROLE $role IN DATABASE regression SET eddy.selection_min_cost = 0;
ALTER ROLE $role IN DATABASE regression SET eddy.max_sources = 16;
ALTER ROLE $role IN DATABASE regression SET eddy.routing_policy = random;
ALTER ROLE $role IN DATABASE regression SET eddy.reopt_frequency = 1;
$role_settings
ALTER SYSTEM SET log_line_prefix = '%m [%p] %e %a: ';
ALTER SYSTEM SET log_min_error_statement = error;
ALTER SYSTEM SET log_error_verbosity = verbose;
SELECT pg_reload_conf();
SQL

# --- sqlsmith -------------------------------------------------------------------
log=$server/server.log
offset=$(stat -c %s "$log")
run=$WORK/run
rm -rf "$run"
mkdir -p "$run"
target="host=$server port=$PORT user=$role dbname=regression"
cap=()
[ "$SECONDS_CAP" != 0 ] && cap=(timeout -s INT "$SECONDS_CAP")
echo "sqlsmith: seed $SEED, up to $QUERIES queries${cap:+ or ${SECONDS_CAP}s}, options: $OPTS"
t0=$SECONDS
# The first SQLSMITH_EXPLAIN statements are kept for the EXPLAIN sample (the
# whole dump of a long run would take hundreds of megabytes).
# shellcheck disable=SC2086
"${cap[@]}" sqlsmith --target="$target" --seed="$SEED" --max-queries="$QUERIES" \
    --verbose --dump-all-queries $OPTS 2>"$run/sqlsmith.log" |
    awk -v n="$EXPLAIN_N" 'n > 0 { print } /;$/ { if (n > 0) n-- }' >"$run/queries.sql"
rc=${PIPESTATUS[0]}
secs=$((SECONDS - t0))
# timeout's 124: the time cap ended the run, which is how it is meant to end
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
    tail -20 "$run/sqlsmith.log"
    echo "sqlsmith: sqlsmith exited with status $rc" >&2
fi
sleep 1   # let the server finish writing its log

/usr/bin/python3 "$top/tests/sqlsmith/check.py" \
    --log "$log" --offset "$offset" --sqlsmith-log "$run/sqlsmith.log" \
    --queries "$run/queries.sql" --seconds "$secs" --seed "$SEED" \
    --psql "$PG_BINDIR/psql" --dsn "$target" --extension-src "$top/extension/src" \
    --report "$WORK/report.txt" --json "$WORK/report.json"
status=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then status=1; fi
echo "sqlsmith: report in $WORK/report.txt; server log $log (from byte $offset)"
exit $status
}

main "$@"
