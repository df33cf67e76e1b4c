"""Answer digests (``eddytools.db.rows_digest``), which the benchmark stores
in results.json and measurements.csv: comparable from one run to the next,
order-independent, content-sensitive.  No server."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from decimal import Decimal

from eddytools.db import rows_digest

ROWS = [
    (1, "alpha", None),
    (2, "beta", Decimal("1.50")),
    (3, "", float("nan")),
    (4, "gamma", -0.0),
    (4, "gamma", -0.0),
]
ROWS_SOURCE = ("[(1, 'alpha', None), (2, 'beta', Decimal('1.50')), (3, '', float('nan')), "
               "(4, 'gamma', -0.0), (4, 'gamma', -0.0)]")


def _digest_in_new_process(hash_seed: str) -> str:
    code = ("from decimal import Decimal\n"
            "from eddytools.db import rows_digest\n"
            f"print(rows_digest({ROWS_SOURCE}))\n")
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    done = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def test_digest_is_the_same_in_separate_processes():
    """Two Python processes with different hash() salts (PYTHONHASHSEED), and
    this one, give the same digest of the same rows, so digests stored by
    one benchmark run can be compared with another's."""
    here = rows_digest(ROWS)
    assert _digest_in_new_process("1") == _digest_in_new_process("2") == here
    assert len(here) == 16 and int(here, 16) >= 0


def test_digest_is_order_independent_and_content_sensitive():
    """Every order of the rows has one digest; a changed value, a value of
    another type, swapped columns, a dropped or a repeated row change it;
    no rows digest to zero."""
    want = rows_digest(ROWS)
    for order in itertools.permutations(ROWS):
        assert rows_digest(order) == want
    variants: list[list[tuple]] = [
        ROWS[:-1],                                              # a row fewer
        [*ROWS, ROWS[0]],                                       # a repeated row
        [ROWS[0], (2, "beta", Decimal("1.5")), *ROWS[2:]],     # 1.50 -> 1.5
        [(1.0, "alpha", None), *ROWS[1:]],                      # 1 -> 1.0
        [("1", "alpha", None), *ROWS[1:]],                      # 1 -> '1'
        [(1, None, "alpha"), *ROWS[1:]],                        # swapped columns
        [*ROWS[:3], (4, "gamma", 0.0), ROWS[4]],                # -0.0 -> 0.0
        [(1, "alphb", None), *ROWS[1:]],                        # another string
    ]
    digests = {rows_digest(v) for v in variants}
    assert want not in digests
    assert len(digests) == len(variants)
    assert rows_digest([]) == "0" * 16
