#!/usr/bin/env bash
# tests/pgregress/run.sh: PostgreSQL 15's own regression suite, eddy on vs off.
#
#   tests/pgregress/run.sh [SCHEDULE]
#
# SCHEDULE defaults to src/test/regress/parallel_schedule of the source
# package (the whole suite, 217 tests; `make test` and `make pgregress` run it).
# Another schedule file (pg_regress format, names of src/test/regress/sql
# tests) runs a subset, e.g. to chase one difference.
#
# Runs the schedule twice with pg_regress, each time in a throwaway instance
# (pg_regress --temp-instance) that preloads eddy and runs CREATE EXTENSION
# eddy in the regression database:
#
#   on   eddy.enabled = on, eddy.selection_min_cost = 0, eddy.max_sources = 16
#        (every block the eddy can take, it takes)
#   off  the same with eddy.enabled = off (PostgreSQL's own plans)
#
# then fails when
#   - a server log shows a crash or an assertion failure (the extension must be
#     installed as an assert-enabled build: make -C extension install EDDY_ASSERT=1),
#   - tests/pgregress/compare.py finds a difference between the results of the
#     two runs that tests/pgregress/expected-differences does not list.
# The runs are compared with each other, not with PostgreSQL's expected files
# (the installed server may be a newer minor release than the source package,
# so a few tests "fail" against those files in both runs alike).
#
# The source package: $PGREGRESS_SRC if set, else /work/pgsrc/postgresql-15-15.18
# or $PGREGRESS_SRC_CACHE/postgresql-15-15.18 if present (default
# /var/tmp/eddy-pgsrc, kept between runs), else fetched there with
# `apt-get source` (deb-src entries are added as twins of the deb entries in
# /etc/apt/sources.list.d/debian.sources when there are none; needs root).
# regress.so (src/test/regress/regress.c) and refint.so/autoinc.so
# (contrib/spi, for the triggers test) are built with PGXS in
# $PGREGRESS_WORK/lib. Nothing is written into the checkout.
#
# Environment: PG_BINDIR, PG_CONFIG, PG_OS_USER (default postgres),
# PGREGRESS_WORK (build dir and the runs' outputs; default /var/tmp/eddy-pgregress),
# PGREGRESS_SRC, PGREGRESS_SRC_CACHE (above), PGREGRESS_PORT (base port,
# default 26000; the runs use it and +1), PGREGRESS_EDDY_CONF (extra lines
# for both runs' postgresql.conf, e.g. "eddy.routing_policy = random").
set -uo pipefail

# The whole script is one function, read before it runs: editing this file
# while a run is under way does not disturb that run.
main() {
local schedule_arg=${1:+$(realpath "$1")}
cd "$(dirname "$0")/../.."
top=$(pwd)
PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
PG_CONFIG=${PG_CONFIG:-$PG_BINDIR/pg_config}
PG_OS_USER=${PG_OS_USER:-postgres}
WORK=${PGREGRESS_WORK:-/var/tmp/eddy-pgregress}
PORT=${PGREGRESS_PORT:-26000}

die() { echo "pgregress: $*" >&2; exit 1; }

as_pg() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$PG_OS_USER" -- "$@"
    else
        "$@"
    fi
}

mkdir -p "$WORK" || die "cannot create $WORK"

# --- the source package and the C modules the suite loads ----------------------
# shellcheck source=tests/pgsrc.sh
. "$(dirname "$0")/../pgsrc.sh"
pg_source
regress_src=$PGREGRESS_SRC/src/test/regress
echo "pgregress: source $PGREGRESS_SRC"
lib=$WORK/lib
build_regress_libs "$lib"

pg_regress=$(dirname "$("$PG_CONFIG" --pgxs)")/../test/regress/pg_regress
[ -x "$pg_regress" ] || die "pg_regress not found at $pg_regress"
test -f "$("$PG_CONFIG" --pkglibdir)/eddy.so" ||
    die "eddy.so is not installed in $("$PG_CONFIG" --pkglibdir)"

schedule=${schedule_arg:-$regress_src/parallel_schedule}
[ -f "$schedule" ] || die "no schedule $schedule"

# The postgres OS user reads the source and the schedule, writes $WORK.
if [ "$(id -u)" -eq 0 ]; then
    chown -R "$PG_OS_USER" "$WORK"
    d=$top
    while [ "$d" != "/" ]; do
        runuser -u "$PG_OS_USER" -- test -x "$d" || chmod o+x "$d"
        d=$(dirname "$d")
    done
    runuser -u "$PG_OS_USER" -- test -r "$schedule" || chmod o+r "$schedule"
fi

# --- the two runs ---------------------------------------------------------------
run_suite() {
    local run=$1 enabled=$2 port=$3 out=$WORK/$1
    rm -rf "$out"
    mkdir -p "$out"
    cat >"$out/eddy.conf" <<CONF
shared_preload_libraries = 'eddy'
eddy.enabled = $enabled
eddy.selection_min_cost = 0
eddy.max_sources = 16
${PGREGRESS_EDDY_CONF:-}
CONF
    [ "$(id -u)" -eq 0 ] && chown -R "$PG_OS_USER" "$out"
    local t0=$SECONDS
    as_pg "$pg_regress" \
        --temp-instance="$out/tmp_check" --temp-config="$out/eddy.conf" \
        --bindir="$PG_BINDIR" --dlpath="$lib" \
        --inputdir="$regress_src" --outputdir="$out" \
        --schedule="$schedule" --load-extension=eddy \
        --port="$port" --no-locale --encoding=UTF8 \
        >"$out/pg_regress.log" 2>&1
    local rc=$?
    local secs=$((SECONDS - t0))
    local total ok
    total=$(grep -cE '^(test| +) [a-z0-9_.]+ +\.\.\. ' "$out/pg_regress.log")
    ok=$(grep -cE '^(test| +) [a-z0-9_.]+ +\.\.\. ok' "$out/pg_regress.log")
    echo "pgregress: run '$run' (eddy.enabled = $enabled): $total tests, $ok match PostgreSQL's expected output, ${secs}s (pg_regress exit $rc)"
    echo "$total $ok $secs" >"$out/summary"
    # pg_regress stops early when the server dies: every scheduled test must have run
    local scheduled
    scheduled=$(grep -E '^test:' "$schedule" | sed 's/^test://' | wc -w)
    if [ "$total" -ne "$scheduled" ]; then
        tail -20 "$out/pg_regress.log"
        echo "pgregress: run '$run' ran $total of $scheduled tests" >&2
        return 1
    fi
    return 0
}

status=0
run_suite on on "$PORT" || status=1
run_suite off off "$((PORT + 1))" || status=1

# --- crashes and assertion failures ---------------------------------------------
for run in on off; do
    log=$WORK/$run/log/postmaster.log
    if [ ! -f "$log" ]; then
        echo "pgregress: no server log for run '$run'" >&2
        status=1
        continue
    fi
    if grep -nE 'TRAP:|terminated by signal|server process .* was terminated|PANIC:|was terminated by exception' "$log"; then
        echo "pgregress: run '$run': crash or assertion failure in $log" >&2
        status=1
    fi
done

# --- results: on vs off -------------------------------------------------------
/usr/bin/python3 "$top/tests/pgregress/compare.py" \
    --expected-differences "$top/tests/pgregress/expected-differences" \
    --report "$WORK/differences.txt" \
    "$WORK/off/results" "$WORK/on/results" || status=1
echo "pgregress: details in $WORK/differences.txt; outputs in $WORK/{on,off}/results"

exit $status
}

main "$@"
