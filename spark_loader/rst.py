"""The horizontally partitioned R, S, T relations of the STAIRs paper (``002`` section 5.4).

Three tables of ``n`` rows (50,000 in the paper) of about 100 bytes, all with the
schema ``(id, a, b, pad)``, queried as ``R JOIN S ON r.a = s.a JOIN T ON s.b = t.b``.
With ``h = n / 2`` and ``g = h / 5`` join-key groups:

* first half (``id < h``): every S row joins exactly 5 R rows (``r.a`` and ``s.a``
  both take each value of ``0..g-1`` five times, in a seeded pseudo-random order),
  and S joins no T row;
* second half (``id >= h``): the reverse: every S row joins exactly 5 T rows through
  ``b`` and no R row.

So ``R JOIN S`` and ``S JOIN T`` each have ``5h`` rows, but the three-way join is
empty: a static plan must build one of the two large intermediate results, while an
adaptive one can route each half of S to the join that eliminates it.

Every value that must not join is unique and kept out of the other tables' ranges:
``r.a = n + id`` (second half), ``s.a = 2n + id`` (second half), ``s.b = 3n + id``
(first half), ``t.b = 4n + id`` (first half); the unused columns are ``r.b = 5n + id``
and ``t.a = 6n + id``.

Nothing here runs at import time; :func:`chunks` is what a Spark task calls.
"""

from __future__ import annotations

from collections.abc import Iterator

from spark_loader.permutation import Permutation

TABLES = ("r", "s", "t")
COLUMNS = ("id", "a", "b", "pad")
INT_BYTES = 12             # id, a, b
MIN_WIDTH = INT_BYTES + 7
DEFAULT_WIDTH = 100
DEFAULT_ROWS = 50_000
MAX_ROWS = 300_000_000     # 7n must fit an int4
FANOUT = 5
BATCH_ROWS = 8192

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _pad(value: int, length: int) -> str:
    letters = []
    for _ in range(7):
        value, digit = divmod(value, 26)
        letters.append(_LETTERS[digit])
    return "".join(reversed(letters)) + "x" * (length - 7)


def row(table: str, i: int, n: int, perms: dict[str, Permutation], pad_len: int) -> str:
    """The COPY line (without newline) of row ``id = i`` of table ``table`` (r, s or t)."""
    h = n // 2
    first = i < h
    if table == "r":
        a = perms["a"](i) // FANOUT if first else n + i
        b = 5 * n + i
    elif table == "s":
        a = perms["a"](i) // FANOUT if first else 2 * n + i
        b = 3 * n + i if first else perms["b"](i - h) // FANOUT
    else:
        a = 6 * n + i
        b = 4 * n + i if first else perms["b"](i - h) // FANOUT
    return f"{i}\t{a}\t{b}\t{_pad(i, pad_len)}"


def chunks(params: dict, lo: int, hi: int) -> Iterator[bytes]:
    """COPY text for rows ``id = lo .. hi-1`` of one of R, S, T.

    ``params``: ``role`` (``r``, ``s`` or ``t``), ``rows``, ``seed``, ``width``.
    """
    role, n, seed = params["role"], params["rows"], params["seed"]
    h = n // 2
    perms = {"a": Permutation(h, seed, f"{role}.a"), "b": Permutation(h, seed, f"{role}.b")}
    pad_len = params["width"] - INT_BYTES
    for start in range(lo, hi, BATCH_ROWS):
        stop = min(start + BATCH_ROWS, hi)
        yield "".join(row(role, i, n, perms, pad_len) + "\n" for i in range(start, stop)).encode()
