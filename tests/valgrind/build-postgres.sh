#!/usr/bin/env bash
# tests/valgrind/build-postgres.sh PREFIX: build PostgreSQL 15 for memcheck.
#
# Debian's PostgreSQL is not built with USE_VALGRIND, so memcheck cannot see
# palloc'd chunks.  This builds PostgreSQL 15 from Debian's source package,
# with USE_VALGRIND (memory contexts tell memcheck about every chunk),
# assertions and debug symbols, and installs the server, the client programs
# and PGXS into PREFIX (nothing else: no docs, no contrib).  Out of tree, in
# PREFIX/build; a PREFIX that already has bin/postgres is left alone.
#
# The source is $PG_SRC if set, else PREFIX/src/postgresql-15-<version>,
# fetched with `apt-get source` (deb-src twins of the Debian entries are
# added to /etc/apt/sources.list.d/debian.sources when missing).
set -euo pipefail

prefix=${1:?usage: build-postgres.sh PREFIX}
PG_SRC_VERSION=${PG_SRC_VERSION:-15.18-0+deb12u1}
upstream=${PG_SRC_VERSION%%-*}

if [ -x "$prefix/bin/postgres" ] && [ -f "$prefix/valgrind.supp" ]; then
    echo "valgrind: using the PostgreSQL build in $prefix"
    exit 0
fi

need=""
for p in gcc make valgrind zlib1g-dev libicu-dev pkg-config; do
    dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
    echo "valgrind: installing$need"
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $need
fi

src=${PG_SRC:-}
if [ -z "$src" ]; then
    src="$prefix/src/postgresql-15-$upstream"
    if [ ! -f "$src/configure" ]; then
        f=/etc/apt/sources.list.d/debian.sources
        if [ -f "$f" ] && ! grep -q '^Types:.*deb-src' "$f"; then
            echo "valgrind: adding deb-src entries to $f"
            sed -i 's/^Types: deb$/Types: deb deb-src/' "$f"
        fi
        command -v dpkg-source >/dev/null || {
            apt-get update -q
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q dpkg-dev
        }
        apt-get update -q
        mkdir -p "$prefix/src"
        (cd "$prefix/src" && apt-get source -q "postgresql-15=$PG_SRC_VERSION")
    fi
fi
[ -f "$src/configure" ] || { echo "valgrind: no PostgreSQL source in $src" >&2; exit 1; }

build="$prefix/build"
mkdir -p "$build"
cd "$build"
echo "valgrind: building PostgreSQL from $src in $build (log: $build/build.log)"
if [ ! -f config.status ]; then
    nice -n 10 "$src/configure" --prefix="$prefix" --enable-cassert --enable-debug \
        --with-icu --without-readline CPPFLAGS=-DUSE_VALGRIND CFLAGS="-O1 -g" >configure.log 2>&1 ||
        { tail -30 configure.log; exit 1; }
fi
# Debian's source package is patched to install server modules and PGXS into
# /usr/lib/postgresql/15/lib whatever the prefix (50-per-version-dirs.patch):
# that would overwrite the system's PostgreSQL.  Keep them under PREFIX.
sed -i "s|^override pkglibdir := .*|override pkglibdir := $prefix/lib/postgresql|" \
    src/Makefile.global
jobs=$(nproc 2>/dev/null || echo 2)
nice -n 10 make -j"$jobs" -s >build.log 2>&1 || { tail -30 build.log; exit 1; }
if ! grep -q "PKGLIBDIR \"$prefix/" src/port/pg_config_paths.h ||
    make -n install 2>/dev/null | grep -q '/usr/lib/postgresql'; then
    echo "valgrind: this build would install outside $prefix; not installing" >&2
    exit 1
fi
nice -n 10 make -s install >install.log 2>&1 || { tail -30 install.log; exit 1; }
# PostgreSQL's suppressions for memcheck, next to the installation it fits
cp "$src/src/tools/valgrind.supp" "$prefix/valgrind.supp"
echo "valgrind: PostgreSQL installed in $prefix"
