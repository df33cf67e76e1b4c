# eddy: top-level Makefile.
#
#   make install     build and install the extension (installs
#                    postgresql-server-dev-15 with apt when it is missing)
#   make test        everything, on a fresh machine: system packages, the
#                    project .venv, an assert-enabled build, a throwaway
#                    server, pg_regress (installcheck) and pytest
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

.PHONY: all build install test sysdeps venv clean

all: build

# PGXS comes with postgresql-server-dev-15; Spark needs a Java runtime.
sysdeps:
	@missing=""; \
	test -f "$$($(PG_CONFIG) --pgxs 2>/dev/null)" || missing="$$missing postgresql-server-dev-15"; \
	test -x $(PG_BINDIR)/postgres || missing="$$missing postgresql-15"; \
	command -v java >/dev/null 2>&1 || missing="$$missing openjdk-17-jre-headless"; \
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

clean:
	$(MAKE) -C extension clean PG_CONFIG=$(PG_CONFIG)
