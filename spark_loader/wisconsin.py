"""Wisconsin benchmark relations, generated one range of rows at a time (executor side).

The schema is DeWitt's (Bitton, DeWitt & Turbyfill 1983; DeWitt 1993): thirteen
integer attributes and three strings.  Column names are the lower-case forms of
DeWitt's (``onePercent`` is ``onepercent``) so that unquoted SQL works as written.

=================  ===========================================================
``unique1``        a seeded pseudo-random permutation of ``0..n-1``
``unique2``        ``0..n-1`` in order (the primary key; rows are emitted in it)
``two`` ...        ``unique1 mod 2, 4, 10, 20``
``onepercent``     ``unique1 mod 100``; ``tenpercent`` mod 10, ``twentypercent``
                   mod 5, ``fiftypercent`` mod 2
``unique3``        ``unique1``
``evenonepercent`` ``onepercent * 2``; ``oddonepercent`` ``onepercent * 2 + 1``
``stringu1``       ``unique1`` in base 26 on 7 letters ``A..Z``, padded with ``x``
``stringu2``       the same for ``unique2``
``string4``        ``AAAA``, ``HHHH``, ``OOOO``, ``VVVV`` (padded with ``x``), cycling
                   with ``unique2``
=================  ===========================================================

Tuple width: 13 four-byte integers plus the three strings.  The study of ``001``
used 244-byte tuples, i.e. 64-character strings (PostgreSQL's regression ``tenk1``
stores them as ``name``); a width ``w`` gives ``stringu1``/``stringu2``
``(w - 52) // 3`` characters each and ``string4`` the rest.

Nothing here runs at import time; :func:`chunks` is what a Spark task calls.
"""

from __future__ import annotations

from collections.abc import Iterator

from spark_loader.permutation import Permutation

COLUMNS = (
    "unique1", "unique2", "two", "four", "ten", "twenty", "onepercent", "tenpercent",
    "twentypercent", "fiftypercent", "unique3", "evenonepercent", "oddonepercent",
    "stringu1", "stringu2", "string4",
)
INT_COLUMNS = 13
SIGNIFICANT = 7            # letters that encode a number (26**7 > 2**31)
MIN_WIDTH = 4 * INT_COLUMNS + 3 * SIGNIFICANT
DEFAULT_WIDTH = 244        # the tuples of the overhead study (001, section 3.1)
MAX_ROWS = 2**31 - 1       # int4 attributes
BATCH_ROWS = 8192

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def string_lengths(width: int) -> tuple[int, int]:
    """(length of stringu1 and stringu2, length of string4) for a tuple ``width``."""
    if width < MIN_WIDTH:
        raise ValueError(f"tuple width {width} is below the minimum of {MIN_WIDTH} bytes")
    rest = width - 4 * INT_COLUMNS
    unique_len = rest // 3
    return unique_len, rest - 2 * unique_len


def unique_string(value: int, length: int) -> str:
    """DeWitt's ``convert``: ``value`` in base 26 on 7 letters, then ``x`` up to ``length``."""
    letters = []
    for _ in range(SIGNIFICANT):
        value, digit = divmod(value, 26)
        letters.append(_LETTERS[digit])
    return "".join(reversed(letters)) + "x" * (length - SIGNIFICANT)


def chunks(params: dict, lo: int, hi: int) -> Iterator[bytes]:
    """COPY text (tab-separated) for rows ``unique2 = lo .. hi-1`` of one relation.

    ``params``: ``rows`` (the relation's cardinality), ``seed``, ``label`` (the name
    that, with the seed, selects the permutation) and ``width``.
    """
    n = params["rows"]
    perm = Permutation(n, params["seed"], params["label"])
    unique_len, s4_len = string_lengths(params["width"])
    pad = "x" * (unique_len - SIGNIFICANT)
    string4 = tuple(c * 4 + "x" * (s4_len - 4) for c in "AHOV")
    # two letters per lookup: 7 letters = 1 + 3 * 2
    pairs = tuple(a + b for a in _LETTERS for b in _LETTERS)

    def su(v: int) -> str:
        return (_LETTERS[v // 308915776 % 26] + pairs[v // 456976 % 676]
                + pairs[v // 676 % 676] + pairs[v % 676] + pad)

    for start in range(lo, hi, BATCH_ROWS):
        lines = []
        for u2 in range(start, min(start + BATCH_ROWS, hi)):
            u1 = perm(u2)
            p = u1 % 100
            lines.append(
                f"{u1}\t{u2}\t{u1 & 1}\t{u1 & 3}\t{u1 % 10}\t{u1 % 20}\t{p}\t{u1 % 10}"
                f"\t{u1 % 5}\t{u1 & 1}\t{u1}\t{2 * p}\t{2 * p + 1}"
                f"\t{su(u1)}\t{su(u2)}\t{string4[u2 & 3]}\n"
            )
        yield "".join(lines).encode()
