"""The clock of cost sampling (extension/src/clock.c): the TSC, read
directly, where the kernel's clocksource is the TSC on x86-64, else
clock_gettime.  eddy.clock shows which, and nobody may set it
(test_security checks that).  The TSC's scale is calibrated at load; a
wrong scale would make every sampled cost, and delay(), wrong by its
factor, so delay() is checked against PostgreSQL's own clock
(clock_timestamp): the best of three 100 ms waits within 0.99-1.2x.  The
best of three, because a wait ends when the eddy's clock says so and the
reading after it may be late by a preemption; it cannot be early."""

from __future__ import annotations

import platform
import re
from pathlib import Path

from eddytools.db import sql_value

CLOCKSOURCE = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource")


def kernel_clock_is_tsc() -> bool:
    try:
        return CLOCKSOURCE.read_text().strip() == "tsc"
    except OSError:
        return False


def test_clock_is_the_tsc_where_the_kernel_uses_it(eddy_conn):
    """The server runs on this machine: where its kernel keeps time with the
    TSC on x86-64, the eddy reads the TSC, at a plausible rate."""
    shown = sql_value(eddy_conn, "SHOW eddy.clock")
    if platform.machine() == "x86_64" and kernel_clock_is_tsc():
        m = re.fullmatch(r"tsc, (\d+\.\d) MHz", shown)
        assert m, shown
        assert 100.0 <= float(m.group(1)) <= 10000.0, shown
    else:
        assert shown == "clock_gettime", shown


def test_delay_agrees_with_postgres_clock(eddy_conn):
    """delay(), which busy-waits on the eddy's clock, lasts what PostgreSQL's
    clock says it should."""
    eddy_conn.execute("""
        CREATE FUNCTION timed_delay(usecs int) RETURNS float8 LANGUAGE plpgsql AS $$
        DECLARE t0 timestamptz;
        BEGIN
            t0 := clock_timestamp();
            PERFORM delay(1, usecs);
            RETURN extract(epoch FROM clock_timestamp() - t0);
        END $$""")
    best = min(sql_value(eddy_conn, "SELECT timed_delay(100000)") for _ in range(3))
    assert 0.099 <= best <= 0.12, best
