"""Table checksums: the CRC-32 of a table's COPY text, assembled from its parts.

Each task computes the CRC-32 (``zlib.crc32``, the checksum of gzip and PNG) of the
bytes it sends, and its byte count.  The driver combines the parts in part order
with :func:`crc32_combine` (zlib's algorithm, which Python's ``zlib`` module does
not expose), so the result is the CRC-32 of the whole table's text in generation
order, whatever the number of parts.  For TPC-H that text is dbgen's ``.tbl`` file
with the trailing ``|`` of each line removed, so a checksum can be checked against
a file made by dbgen itself, e.g. ``sed 's/|$//' lineitem.tbl | python3 -c 'import
sys, zlib; print(f"{zlib.crc32(sys.stdin.buffer.read()):08x}")'``.
"""

from __future__ import annotations

from collections.abc import Iterable

_POLY = 0xEDB88320   # CRC-32 (reflected)


def _times(matrix: list[int], vector: int) -> int:
    total, i = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[i]
        vector >>= 1
        i += 1
    return total


def _square(matrix: list[int]) -> list[int]:
    return [_times(matrix, matrix[n]) for n in range(32)]


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of ``a + b`` from ``crc32(a)``, ``crc32(b)`` and ``len(b)``."""
    if len2 <= 0:
        return crc1
    odd = [_POLY] + [1 << n for n in range(31)]     # one zero bit
    even = _square(odd)                                # two zero bits
    odd = _square(even)                                # four zero bits
    while True:
        even = _square(odd)                            # first pass: one zero byte
        if len2 & 1:
            crc1 = _times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = _square(even)
        if len2 & 1:
            crc1 = _times(odd, crc1)
        len2 >>= 1
        if not len2:
            break
    return crc1 ^ crc2


def combine_parts(parts: Iterable[tuple[int, int]]) -> int:
    """The CRC-32 of the concatenation of parts given in order as ``(crc, length)``."""
    crc = 0
    for part_crc, length in parts:
        crc = crc32_combine(crc, part_crc, length)
    return crc
