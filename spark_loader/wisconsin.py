"""Wisconsin benchmark relations: the one definition of their columns, and the
generator that a Spark task runs for one range of rows (executor side).

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

Every formula is defined once here, as Python (:meth:`Attribute.value`,
:func:`unique_string`, :func:`string4`) and as PostgreSQL SQL over a key
expression (:meth:`Attribute.sql`, :func:`unique_string_sql`,
:func:`string4_sql`), so that tables built in SQL with ``generate_series``
(the Wisconsin-like test tables of ``eddytools.querygen`` and
``eddytools.joingen``) use the same formulas as the loader.  Those test
tables key the derived attributes on ``unique2`` (the series) rather than
``unique1``, take ``unique1`` from :func:`multiplicative_permutation_sql`
(cheap in SQL, unlike :class:`Permutation`) and use the short
:func:`compact_string_sql` strings.

Nothing here runs at import time; :func:`chunks` is what a Spark task calls.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from spark_loader.permutation import Permutation


@dataclass(frozen=True)
class Attribute:
    """An integer attribute derived from a key (``unique1`` in DeWitt's
    relations): ``(key % modulus) * factor + offset``, or the key itself when
    ``modulus`` is None."""

    name: str
    modulus: int | None = None
    factor: int = 1
    offset: int = 0

    def value(self, key: int) -> int:
        """The attribute of a row whose key is ``key`` (non-negative)."""
        v = key if self.modulus is None else key % self.modulus
        return v * self.factor + self.offset

    def sql(self, key: str) -> str:
        """The attribute as a PostgreSQL expression over the integer SQL
        expression ``key`` (an identifier or a parenthesized expression)."""
        text = key if self.modulus is None else f"{key} % {self.modulus}"
        if self.factor != 1:
            text = f"{text} * {self.factor}"
        if self.offset:
            text = f"{text} + {self.offset}"
        return text


# DeWitt's integer attributes after unique1 and unique2, in column order
DERIVED: tuple[Attribute, ...] = (
    Attribute("two", 2),
    Attribute("four", 4),
    Attribute("ten", 10),
    Attribute("twenty", 20),
    Attribute("onepercent", 100),
    Attribute("tenpercent", 10),
    Attribute("twentypercent", 5),
    Attribute("fiftypercent", 2),
    Attribute("unique3"),
    Attribute("evenonepercent", 100, 2),
    Attribute("oddonepercent", 100, 2, 1),
)
# PostgreSQL's regression tables name onepercent "hundred"
ALIASES = {"hundred": "onepercent"}

COLUMNS = (
    "unique1", "unique2", *(a.name for a in DERIVED), "stringu1", "stringu2", "string4",
)
INT_COLUMNS = 13
SIGNIFICANT = 7            # letters that encode a number (26**7 > 2**31)
MIN_WIDTH = 4 * INT_COLUMNS + 3 * SIGNIFICANT
DEFAULT_WIDTH = 244        # the tuples of the overhead study (001, section 3.1)
MAX_ROWS = 2**31 - 1       # int4 attributes
BATCH_ROWS = 8192

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
STRING4_VALUES = ("AAAA", "HHHH", "OOOO", "VVVV")


def attribute(name: str) -> Attribute:
    """The derived attribute ``name`` (or its alias: ``hundred``), named ``name``."""
    wanted = ALIASES.get(name, name)
    for a in DERIVED:
        if a.name == wanted:
            return Attribute(name, a.modulus, a.factor, a.offset)
    raise KeyError(name)


def attributes_sql(key: str, names: Sequence[str]) -> list[str]:
    """``<formula> AS <name>`` select-list items of the attributes ``names``
    derived from the SQL expression ``key``."""
    return [f"{attribute(n).sql(key)} AS {n}" for n in names]


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


def string4(key: int, length: int) -> str:
    """``string4``: AAAA, HHHH, OOOO, VVVV cycling with ``key``, ``x`` up to ``length``."""
    return STRING4_VALUES[key % 4] + "x" * (length - 4)


def _pad_sql(text: str, pad: int) -> str:
    return f"{text} || repeat('x', {pad})" if pad > 0 else text


def unique_string_sql(key: str, length: int) -> str:
    """:func:`unique_string` as a PostgreSQL expression over the SQL ``key``."""
    letters = " || ".join(f"chr(65 + {key} / {26 ** k} % 26)"
                          for k in reversed(range(SIGNIFICANT)))
    return _pad_sql(letters, length - SIGNIFICANT)


def string4_sql(key: str, length: int) -> str:
    """:func:`string4` as a PostgreSQL expression over the SQL ``key``."""
    values = ", ".join(f"'{v}'" for v in STRING4_VALUES)
    return _pad_sql(f"(ARRAY[{values}])[1 + {key} % 4]", length - 4)


def compact_string_sql(key: str, pad: int, modulus: int) -> str:
    """The short ``stringu1`` of the Wisconsin-like test tables: the two low
    base-26 digits of ``key`` as letters (lowest first), ``pad`` x's, and
    ``key % modulus`` in decimal (``'AB' 'xxxx' '27'``)."""
    return (f"chr(65 + {key} % 26) || chr(65 + ({key} / 26) % 26) || "
            f"'{'x' * pad}' || ({key} % {modulus})::text")


def multiplicative_permutation_sql(key: str, rows: int, prime: int = 7919) -> str:
    """``(key * prime) % rows``: a permutation of ``0..rows-1`` when ``key``
    runs over them and ``prime`` does not divide ``rows``; the SQL-side
    ``unique1`` of the test tables (cheap in SQL, unlike :class:`Permutation`)."""
    if rows % prime == 0:
        raise ValueError(f"{prime} divides {rows}: not a permutation")
    return f"({key} * {prime}) % {rows}"


def chunks(params: dict, lo: int, hi: int) -> Iterator[bytes]:
    """COPY text (tab-separated) for rows ``unique2 = lo .. hi-1`` of one relation.

    ``params``: ``rows`` (the relation's cardinality), ``seed``, ``label`` (the name
    that, with the seed, selects the permutation) and ``width``.
    """
    n = params["rows"]
    perm = Permutation(n, params["seed"], params["label"])
    unique_len, s4_len = string_lengths(params["width"])
    pad = "x" * (unique_len - SIGNIFICANT)
    string4s = tuple(string4(k, s4_len) for k in range(4))
    derived = tuple((a.modulus or 0, a.factor, a.offset) for a in DERIVED)
    # unique_string by table lookup, two letters at a time: 7 letters = 1 + 3 * 2
    pairs = tuple(a + b for a in _LETTERS for b in _LETTERS)

    def su(v: int) -> str:
        return (_LETTERS[v // 308915776 % 26] + pairs[v // 456976 % 676]
                + pairs[v // 676 % 676] + pairs[v % 676] + pad)

    for start in range(lo, hi, BATCH_ROWS):
        lines = []
        for u2 in range(start, min(start + BATCH_ROWS, hi)):
            u1 = perm(u2)
            ints = "\t".join([str((u1 % m if m else u1) * f + o) for m, f, o in derived])
            lines.append(f"{u1}\t{u2}\t{ints}\t{su(u1)}\t{su(u2)}\t{string4s[u2 & 3]}\n")
        yield "".join(lines).encode()
