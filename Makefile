# eddy: top-level Makefile.
#
#   make install     build and install the extension (installs
#                    postgresql-server-dev-15 with apt when it is missing)
#   make bench       the main job: the overhead benchmark of the TelegraphCQ
#                    study, end to end (below)
#   make test        everything, on a fresh machine: system packages, the
#                    project .venv, an assert-enabled build, a throwaway
#                    server, pg_regress (installcheck), PostgreSQL's own
#                    regression suite under eddies (below), a short sqlsmith
#                    run (below) and pytest
#   make pgregress   PostgreSQL 15's regression suite (src/test/regress of the
#                    15.18 source package; fetched with `apt-get source` when
#                    missing) twice, eddy on (eddy.selection_min_cost = 0) and
#                    off, against an assert-enabled build; fails on a crash,
#                    an assertion failure, or a difference in results between
#                    the two runs that tests/pgregress/expected-differences
#                    does not list.  The whole suite takes a few minutes, so
#                    `make test` runs all of it too (tests/pgregress/run.sh)
#   make sqlsmith    random queries (sqlsmith) against PostgreSQL's regression
#                    database with every eddy forced on (selection_min_cost 0,
#                    max_sources 16, random routing, reopt_frequency 1), long
#                    form: SQLSMITH_QUERIES queries (seed SQLSMITH_SEED) or
#                    SQLSMITH_SECONDS, whichever comes first, on an
#                    assert-enabled build; fails on a crash, an assertion
#                    failure, or an internal (XX000) or eddy error that
#                    PostgreSQL does not raise with eddy.enabled = off.  The
#                    server and its regression database stay in SQLSMITH_SERVER
#                    between runs (rm -rf it to start over); see
#                    tests/sqlsmith/run.sh.  make test runs a short form
#   make bench       the overhead benchmark of the TelegraphCQ study, end to
#                    end: a non-assert build, a throwaway server with eddy
#                    preloaded (unless DSN=... names one), the Spark loader,
#                    every experiment; results and plots in bench-results/
#                    (untracked; BENCH_OUT=dir elsewhere), or, with
#                    BENCH_PUBLISH=1 (or PUBLISH=1), in docs/bench/, refreshing the committed
#                    results (BENCH_ARGS="--quick" for a smoke run; see
#                    .venv/bin/python -m eddytools.bench --help)
#   make experiments the STAIRs paper's experiments (VLDB 2004, section 5:
#                    Figures 9, 7 and 8), end to end like make bench: a
#                    non-assert build, a server of its own in
#                    EXPERIMENTS_SERVER (kept between runs: the loaded tables
#                    stay) unless DSN=... names one, the Spark loader, every
#                    figure; results, goals and plots in experiments-results/
#                    (untracked; EXPERIMENTS_OUT=dir elsewhere), or, with
#                    PUBLISH=1, in docs/experiments/ (EXPERIMENTS_ARGS="--quick"
#                    for a smoke run; see .venv/bin/python -m
#                    eddytools.experiments --help); first, the Eddies paper's
#                    experiments (SIGMOD 2000, Figures 4-13: eddytools.
#                    eddies_paper) into experiments-results/eddies/ or
#                    docs/experiments/eddies/ (EXPERIMENTS_ARGS="--figures
#                    e4,e5,e6,e7,e8,e9,e10,e11,e12,e13" for those alone)
#   make experiments-stems  the SteMs paper's Figures 7 and 8 on the hybrid
#                    index/hash join (issue 46), set up as make experiments:
#                    results in experiments-results/stems, or with PUBLISH=1 in
#                    docs/experiments/stems (STEMS_ARGS="--quick" for a smoke run)
#   make tpch-bench  TPC-H's 22 queries with the eddy on and off (issue 13),
#                    under PostgreSQL's defaults and with work_mem 64MB, serial
#                    and parallel: plans with an Eddy and the planner's reasons
#                    where not, times (interleaved rounds, medians, an A/A
#                    spread), peak backend memory, results checked on against
#                    off.  Set up like make experiments: a non-assert build, a
#                    server of its own in TPCH_SERVER (kept between runs: the
#                    loaded TPC-H database stays) unless DSN=... names one;
#                    results in tpch-results/sf<scale>/ (untracked;
#                    TPCH_OUT=dir elsewhere), or, with PUBLISH=1, in
#                    docs/tpch/sf<scale>/ (TPCH_ARGS="--quick" for SF 0.1 and 1
#                    round; see .venv/bin/python -m eddytools.tpch_bench --help)
#   make robustness  the misestimation workload (issue 48): 36 generated
#                    queries of 3-10 relations over a skewed, correlated
#                    snowflake schema with stale statistics, eddy (defaults)
#                    against vanilla at PostgreSQL's defaults, paired ratios
#                    with bootstrap 95% intervals and an A/A twin; and per
#                    query the eddy's worst/best over 5 random starts
#                    beside PostgreSQL's over 5 forced join orders.  Set up
#                    like make tpch-bench: a non-assert build, a server of
#                    its own in ROBUSTNESS_SERVER (kept between runs: the
#                    loaded data stays) unless DSN=... names one; results in
#                    robustness-results/ (untracked; ROBUSTNESS_OUT=dir
#                    elsewhere), or, with PUBLISH=1, in docs/robustness/
#                    (ROBUSTNESS_ARGS="--quick" for scale 0.02, 6 queries, 1
#                    round; see .venv/bin/python -m eddytools.robustness --help)
#   make ab OLD=<rev> NEW=<rev>  A/B of two builds of the extension on the
#                    misestimation workload (eddytools.ab_builds): each git
#                    revision built without assertions into a private copy of
#                    PostgreSQL under AB_BUILD_DIR, the server of
#                    ROBUSTNESS_SERVER (one data directory for both builds)
#                    restarted with each build in each round; NEW/OLD of the
#                    eddy's time with an A/A twin, per query and as geometric
#                    means, in ab-results/ (untracked; AB_OUT=dir elsewhere;
#                    AB_ARGS="--quick" for scale 0.02, 6 queries, 1 round)
#   make load        concurrent load: LOAD_CLIENTS (8) pgbench sessions, half
#                    with prepared statements, half with the simple protocol,
#                    running checked eddy queries for LOAD_SECONDS (600) on an
#                    assert-enabled build; fails on any error, crash or
#                    backend memory growth (see python/eddytools/load.py)
#   make valgrind    the pg_regress tests and a subset of pytest with the server
#                    under valgrind's memcheck, against a PostgreSQL 15 built
#                    with USE_VALGRIND (built once into VG_PREFIX, default
#                    /opt/pg-valgrind, from Debian's source package); fails if
#                    any memory error involves the extension.  Slow (not part
#                    of make test); see tests/valgrind/run.sh
#   make fuzz        randomized differential testing, long form: a throwaway
#                    server with the assert-enabled extension, FUZZ_QUERIES
#                    generated queries (seed FUZZ_SEED, FUZZ_SETTINGS settings
#                    each; FUZZ_MINUTES caps the run); failures are minimised
#                    into FUZZ_SAVE (default tests/regressions) and the summary
#                    written to FUZZ_REPORT
#   make clean
#
# Run as root on a fresh Debian 12 machine, or as a user who can install
# packages and write to PostgreSQL's directories.

PG_BINDIR ?= /usr/lib/postgresql/15/bin
PG_CONFIG ?= $(PG_BINDIR)/pg_config
VENV ?= .venv
# Debian's interpreter: the tests run as the unprivileged postgres user, who
# must be able to execute the venv's python (a pyenv under /root is private).
PYTHON ?= /usr/bin/python3
export PG_BINDIR PG_CONFIG

.PHONY: all build install test pgregress sqlsmith bench experiments experiments-stems tpch-bench robustness ab load valgrind fuzz sysdeps venv clean

all: build

# Everything make test and make bench need beyond postgresql-15,
# postgresql-client-15, Python and make: the server headers come with
# postgresql-server-dev-15 (Debian ships pgxs.mk in postgresql-client-15, so
# its presence proves nothing), which does not pull in a C compiler (the
# extension, and the regression suite's regress.so, are built with gcc);
# Spark needs a Java runtime (and ps); sqlsmith is make test's random query
# generator; python3-venv for the project .venv.  (tests/pgregress/run.sh
# installs dpkg-dev itself when it has to fetch PostgreSQL's source.)
sysdeps:
	@missing=""; \
	{ test -f "$$($(PG_CONFIG) --includedir-server 2>/dev/null)/postgres.h" && \
	  test -f "$$($(PG_CONFIG) --pgxs 2>/dev/null)"; } || missing="$$missing postgresql-server-dev-15"; \
	test -x $(PG_BINDIR)/postgres || missing="$$missing postgresql-15"; \
	command -v gcc >/dev/null 2>&1 && test -f /usr/include/stdio.h || missing="$$missing build-essential"; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
	command -v ps >/dev/null 2>&1 || missing="$$missing procps"; \
	command -v sqlsmith >/dev/null 2>&1 || missing="$$missing sqlsmith"; \
	$(PYTHON) -c 'import ensurepip, venv' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" -ne 0 ]; then echo "run as root, or install:$$missing" >&2; exit 1; fi; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

build: sysdeps
	$(MAKE) -C extension PG_CONFIG=$(PG_CONFIG)

install: build
	$(MAKE) -C extension install PG_CONFIG=$(PG_CONFIG)

# The tests run an assert-enabled build: rebuild from clean with the flag,
# after checking that the production build compiles warning-free too.
test: sysdeps venv
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension install EDDY_ASSERT=1 PG_CONFIG=$(PG_CONFIG)
	VENV=$(abspath $(VENV)) tests/run-tests.sh

# The regression suite alone (make test runs it as well); results and the
# difference report in $(PGREGRESS_WORK).
PGREGRESS_WORK ?= /var/tmp/eddy-pgregress
pgregress: sysdeps
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension install EDDY_ASSERT=1 PG_CONFIG=$(PG_CONFIG)
	PGREGRESS_WORK=$(PGREGRESS_WORK) tests/pgregress/run.sh

# sqlsmith, long form (make test runs a short one): the server in
# $(SQLSMITH_SERVER)/server keeps its regression database between runs; report
# in $(SQLSMITH_SERVER)/report.txt.
SQLSMITH_QUERIES ?= 100000
SQLSMITH_SECONDS ?= 1800
SQLSMITH_SEED ?= 1
SQLSMITH_PORT ?= 25436
SQLSMITH_SERVER ?= /var/tmp/eddy-sqlsmith
sqlsmith: sysdeps
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension install EDDY_ASSERT=1 PG_CONFIG=$(PG_CONFIG)
	SQLSMITH_WORK=$(SQLSMITH_SERVER) SQLSMITH_PORT=$(SQLSMITH_PORT) SQLSMITH_KEEP=1 \
	  SQLSMITH_QUERIES=$(SQLSMITH_QUERIES) SQLSMITH_SECONDS=$(SQLSMITH_SECONDS) \
	  SQLSMITH_SEED=$(SQLSMITH_SEED) tests/sqlsmith/run.sh

# The benchmark needs a build without assertions: rebuild from clean.  With
# DSN=... (or PGHOST/PGDATABASE in the environment) it uses that server, which
# must preload eddy; otherwise it starts its own server as the postgres OS user
# in BENCH_SERVER (kept between runs, so the loaded tables are reused; stopped
# after each run; rm -rf it to start over).  The results go to the untracked
# bench-results/, so a run leaves the checkout clean; BENCH_PUBLISH=1 (or PUBLISH=1) writes
# them into docs/bench/ instead, to refresh the committed results on purpose.
DSN ?=
BENCH_PUBLISH ?= $(PUBLISH)
BENCH_OUT ?= $(if $(filter 1 yes true,$(BENCH_PUBLISH)),docs/bench,bench-results)
BENCH_ARGS ?=
BENCH_PORT ?= 25433
BENCH_SERVER ?= /tmp/eddy-bench-server
bench: sysdeps venv
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension install PG_CONFIG=$(PG_CONFIG)
	@if [ -n "$(DSN)" ] || [ -n "$$PGHOST$$PGDATABASE" ]; then \
	  $(VENV)/bin/python -m eddytools.bench --dsn "$(DSN)" --out $(BENCH_OUT) $(BENCH_ARGS); \
	else \
	  trap 'tests/pgserver.sh stop $(BENCH_SERVER)' EXIT INT TERM; \
	  tests/pgserver.sh start $(BENCH_SERVER) $(BENCH_PORT) || exit 1; \
	  $(VENV)/bin/python -m eddytools.bench \
	    --dsn "host=$(BENCH_SERVER) port=$(BENCH_PORT) user=postgres dbname=postgres" \
	    --out $(BENCH_OUT) $(BENCH_ARGS); \
	  status=$$?; tests/pgserver.sh stop $(BENCH_SERVER); trap - EXIT INT TERM; exit $$status; \
	fi

# The STAIRs experiments, set up as the benchmark is (non-assert build, own
# server unless DSN=..., results untracked unless PUBLISH=1 or
# EXPERIMENTS_PUBLISH=1).  The full default run takes about the time given in
# docs/experiments/README.md; EXPERIMENTS_ARGS="--quick" a few minutes.  The
# Eddies paper's Figures 4-13 run first, into $(EXPERIMENTS_OUT)/eddies
# (eddytools.eddies_paper; EXPERIMENTS_ARGS="--figures e4,e5,...,e13" runs
# them alone, about 10 minutes).
PUBLISH ?=
EXPERIMENTS_PUBLISH ?= $(PUBLISH)
EXPERIMENTS_OUT ?= $(if $(filter 1 yes true,$(EXPERIMENTS_PUBLISH)),docs/experiments,experiments-results)
EXPERIMENTS_ARGS ?=
EXPERIMENTS_PORT ?= 25437
EXPERIMENTS_SERVER ?= /tmp/eddy-experiments-server
experiments: sysdeps venv
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension install PG_CONFIG=$(PG_CONFIG)
	@if [ -n "$(DSN)" ] || [ -n "$$PGHOST$$PGDATABASE" ]; then \
	  $(VENV)/bin/python -m eddytools.experiments --dsn "$(DSN)" --out $(EXPERIMENTS_OUT) $(EXPERIMENTS_ARGS); \
	else \
	  trap 'tests/pgserver.sh stop $(EXPERIMENTS_SERVER)' EXIT INT TERM; \
	  tests/pgserver.sh start $(EXPERIMENTS_SERVER) $(EXPERIMENTS_PORT) || exit 1; \
	  $(VENV)/bin/python -m eddytools.experiments \
	    --dsn "host=$(EXPERIMENTS_SERVER) port=$(EXPERIMENTS_PORT) user=postgres dbname=postgres" \
	    --out $(EXPERIMENTS_OUT) $(EXPERIMENTS_ARGS); \
	  status=$$?; tests/pgserver.sh stop $(EXPERIMENTS_SERVER); trap - EXIT INT TERM; exit $$status; \
	fi

# The SteMs paper's Figures 7 and 8 on the hybrid index/hash join (issue 46),
# set up as the experiments are (non-assert build, own server unless DSN=...,
# results in experiments-results/stems unless PUBLISH=1: docs/experiments/stems).
# About a minute; STEMS_ARGS="--quick" a few seconds.
STEMS_OUT ?= $(if $(filter 1 yes true,$(EXPERIMENTS_PUBLISH)),docs/experiments/stems,experiments-results/stems)
STEMS_ARGS ?=
experiments-stems: sysdeps venv
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension install PG_CONFIG=$(PG_CONFIG)
	@if [ -n "$(DSN)" ] || [ -n "$$PGHOST$$PGDATABASE" ]; then \
	  $(VENV)/bin/python -m eddytools.stems_paper --dsn "$(DSN)" --out $(STEMS_OUT) $(STEMS_ARGS); \
	else \
	  trap 'tests/pgserver.sh stop $(EXPERIMENTS_SERVER)' EXIT INT TERM; \
	  tests/pgserver.sh start $(EXPERIMENTS_SERVER) $(EXPERIMENTS_PORT) || exit 1; \
	  $(VENV)/bin/python -m eddytools.stems_paper \
	    --dsn "host=$(EXPERIMENTS_SERVER) port=$(EXPERIMENTS_PORT) user=postgres dbname=postgres" \
	    --out $(STEMS_OUT) $(STEMS_ARGS); \
	  status=$$?; tests/pgserver.sh stop $(EXPERIMENTS_SERVER); trap - EXIT INT TERM; exit $$status; \
	fi

# TPC-H eddy on against off (issue 13), set up as the experiments are
# (non-assert build, own server unless DSN=..., results untracked unless
# PUBLISH=1 or TPCH_PUBLISH=1).  SF 1 with 3 rounds took 17 minutes on the
# shared 2-core machine (loading SF 1 the first time a minute more);
# TPCH_ARGS="--quick" (SF 0.1, 1 round) about a minute.
TPCH_PUBLISH ?= $(PUBLISH)
TPCH_OUT ?= $(if $(filter 1 yes true,$(TPCH_PUBLISH)),docs/tpch,tpch-results)
TPCH_ARGS ?=
TPCH_PORT ?= 25438
TPCH_SERVER ?= /tmp/eddy-tpch-server
tpch-bench: sysdeps venv
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension install PG_CONFIG=$(PG_CONFIG)
	@if [ -n "$(DSN)" ] || [ -n "$$PGHOST$$PGDATABASE" ]; then \
	  $(VENV)/bin/python -m eddytools.tpch_bench --dsn "$(DSN)" --out $(TPCH_OUT) $(TPCH_ARGS); \
	else \
	  trap 'tests/pgserver.sh stop $(TPCH_SERVER)' EXIT INT TERM; \
	  tests/pgserver.sh start $(TPCH_SERVER) $(TPCH_PORT) || exit 1; \
	  $(VENV)/bin/python -m eddytools.tpch_bench \
	    --dsn "host=$(TPCH_SERVER) port=$(TPCH_PORT) user=postgres dbname=postgres" \
	    --out $(TPCH_OUT) $(TPCH_ARGS); \
	  status=$$?; tests/pgserver.sh stop $(TPCH_SERVER); trap - EXIT INT TERM; exit $$status; \
	fi

# The misestimation workload (issue 48), set up as tpch-bench is (non-assert
# build, own server unless DSN=..., results untracked unless PUBLISH=1 or
# ROBUSTNESS_PUBLISH=1).  ROBUSTNESS_ARGS="--quick" takes about a minute.
ROBUSTNESS_PUBLISH ?= $(PUBLISH)
ROBUSTNESS_OUT ?= $(if $(filter 1 yes true,$(ROBUSTNESS_PUBLISH)),docs/robustness,robustness-results)
ROBUSTNESS_ARGS ?=
ROBUSTNESS_PORT ?= 25439
ROBUSTNESS_SERVER ?= /tmp/eddy-robustness-server
robustness: sysdeps venv
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension install PG_CONFIG=$(PG_CONFIG)
	@if [ -n "$(DSN)" ] || [ -n "$$PGHOST$$PGDATABASE" ]; then \
	  $(VENV)/bin/python -m eddytools.robustness --dsn "$(DSN)" --out $(ROBUSTNESS_OUT) $(ROBUSTNESS_ARGS); \
	else \
	  trap 'tests/pgserver.sh stop $(ROBUSTNESS_SERVER)' EXIT INT TERM; \
	  tests/pgserver.sh start $(ROBUSTNESS_SERVER) $(ROBUSTNESS_PORT) || exit 1; \
	  $(VENV)/bin/python -m eddytools.robustness \
	    --dsn "host=$(ROBUSTNESS_SERVER) port=$(ROBUSTNESS_PORT) user=postgres dbname=postgres" \
	    --out $(ROBUSTNESS_OUT) $(ROBUSTNESS_ARGS); \
	  status=$$?; tests/pgserver.sh stop $(ROBUSTNESS_SERVER); trap - EXIT INT TERM; exit $$status; \
	fi

# A/B of two builds (eddytools.ab_builds) on the robustness server's data
# directory: refused while a server runs on it (the robustness target's
# server, or anyone's); the worktrees and the two PostgreSQL copies stay in
# AB_BUILD_DIR between runs.  AB_WORKLOAD: the workload (robustness, the only
# one); AB_ARGS: the tool's options (--rounds, --queries, --quick, ...; see
# .venv/bin/python -m eddytools.ab_builds --help).
AB_WORKLOAD ?= robustness
AB_OUT ?= ab-results
AB_ARGS ?=
AB_BUILD_DIR ?= /tmp/eddy-ab
ab: sysdeps venv
	@if [ -z "$(OLD)" ] || [ -z "$(NEW)" ]; then \
	  echo "usage: make ab OLD=<git rev> NEW=<git rev> [AB_ARGS=...]" >&2; exit 2; fi
	$(VENV)/bin/python -m eddytools.ab_builds --old "$(OLD)" --new "$(NEW)" \
	  --workload $(AB_WORKLOAD) --server-dir $(ROBUSTNESS_SERVER) --port $(ROBUSTNESS_PORT) \
	  --build-dir $(AB_BUILD_DIR) --out $(AB_OUT) $(AB_ARGS)

# Concurrent load on a throwaway server (assert-enabled build, as make test):
# pgbench clients running checked eddy queries, backend memory sampled, the
# server log checked for crashes.  Report in $(LOAD_SERVER)/load-report.json.
LOAD_SECONDS ?= 600
LOAD_CLIENTS ?= 8
LOAD_PORT ?= 25434
LOAD_SERVER ?= /tmp/eddy-load-server
load: sysdeps venv
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension install EDDY_ASSERT=1 PG_CONFIG=$(PG_CONFIG)
	@trap 'tests/pgserver.sh stop $(LOAD_SERVER)' EXIT INT TERM; \
	tests/pgserver.sh start $(LOAD_SERVER) $(LOAD_PORT) || exit 1; \
	$(PG_BINDIR)/psql -h $(LOAD_SERVER) -p $(LOAD_PORT) -U postgres -d postgres -qAt \
	  -c "SELECT 1 FROM pg_database WHERE datname = 'eddy_load'" | grep -q 1 || \
	  $(PG_BINDIR)/createdb -h $(LOAD_SERVER) -p $(LOAD_PORT) -U postgres eddy_load || exit 1; \
	$(VENV)/bin/python -m eddytools.load \
	  --dsn "host=$(LOAD_SERVER) port=$(LOAD_PORT) user=postgres dbname=eddy_load" \
	  --seconds $(LOAD_SECONDS) --clients $(LOAD_CLIENTS) \
	  --server-log $(LOAD_SERVER)/server.log --pgbench $(PG_BINDIR)/pgbench \
	  --json $(LOAD_SERVER)/load-report.json; \
	status=$$?; tests/pgserver.sh stop $(LOAD_SERVER); trap - EXIT INT TERM; exit $$status

# Memcheck: builds its own PostgreSQL (with USE_VALGRIND) and extension there.
# VG_PYTEST="tests/..." picks the pytest tests, VG_STRICT=1 also fails on
# memory errors outside the extension, VG_OPTS adds valgrind options.
VG_PREFIX ?= /opt/pg-valgrind
valgrind: sysdeps venv
	VENV=$(abspath $(VENV)) VG_PREFIX=$(VG_PREFIX) tests/valgrind/run.sh

FUZZ_QUERIES ?= 5000
FUZZ_SEED ?= 1
FUZZ_SETTINGS ?= 8
FUZZ_MINUTES ?= 0
FUZZ_PORT ?= 25435
FUZZ_SERVER ?= /tmp/eddy-fuzz-server
FUZZ_SAVE ?= tests/regressions
FUZZ_REPORT ?= /tmp/eddy-fuzz-report.json
fuzz: sysdeps venv
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C extension install EDDY_ASSERT=1 PG_CONFIG=$(PG_CONFIG)
	@trap 'tests/pgserver.sh stop $(FUZZ_SERVER)' EXIT INT TERM; \
	tests/pgserver.sh start $(FUZZ_SERVER) $(FUZZ_PORT) || exit 1; \
	$(VENV)/bin/python -m eddytools.fuzz \
	  --dsn "host=$(FUZZ_SERVER) port=$(FUZZ_PORT) user=postgres dbname=postgres" \
	  --queries $(FUZZ_QUERIES) --seed $(FUZZ_SEED) --settings $(FUZZ_SETTINGS) \
	  --minutes $(FUZZ_MINUTES) --save $(FUZZ_SAVE) --report $(FUZZ_REPORT); \
	status=$$?; tests/pgserver.sh stop $(FUZZ_SERVER); trap - EXIT INT TERM; exit $$status

clean:
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
