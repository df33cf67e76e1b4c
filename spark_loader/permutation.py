"""A seeded pseudo-random permutation of ``0..n-1`` that any task can evaluate on its own.

Wisconsin's ``unique1`` must be a random permutation of the row numbers.  Shuffling
``n`` numbers needs the whole list in one place (or a global shuffle in Spark); instead
we use a *bijection* ``P: [0, n) -> [0, n)`` that is cheap to evaluate at any point,
so a task that generates rows ``lo..hi-1`` computes ``P(lo) .. P(hi-1)`` with no
knowledge of the other tasks, and the result does not depend on how rows were split.

Construction: a balanced Feistel network over ``2k`` bits (the smallest even bit
count with ``4**k >= n``), whose round function mixes the right half with a 64-bit
round key (splitmix64-style multiply/xor-shift).  A Feistel network is a bijection
of ``[0, 4**k)`` whatever the round function; *cycle walking* (re-applying it until
the value falls below ``n``) restricts it to a bijection of ``[0, n)``.  Because
``4**k < 4n``, fewer than four steps are needed on average.

Round keys come from BLAKE2b over ``(seed, label, n)``, so the permutation is
stable across Python versions and machines (``hash()`` is not).
"""

from __future__ import annotations

import hashlib

_M64 = (1 << 64) - 1
ROUNDS = 4


def round_keys(seed: int, label: str, n: int, rounds: int = ROUNDS) -> tuple[int, ...]:
    """The Feistel round keys for permutation ``label`` of ``n`` elements under ``seed``."""
    digest = hashlib.blake2b(f"{seed}/{label}/{n}".encode(), digest_size=8 * rounds).digest()
    return tuple(int.from_bytes(digest[8 * i:8 * i + 8], "little") for i in range(rounds))


class Permutation:
    """``P(i)`` for ``i`` in ``[0, n)``: a seeded bijection of ``[0, n)`` onto itself."""

    __slots__ = ("_half", "_keys", "_mask", "n")

    def __init__(self, n: int, seed: int, label: str) -> None:
        if n < 1:
            raise ValueError(f"permutation of {n} elements")
        bits = max(2, (n - 1).bit_length())
        bits += bits & 1
        self.n = n
        self._half = bits // 2
        self._mask = (1 << self._half) - 1
        self._keys = round_keys(seed, label, n)

    def __call__(self, x: int) -> int:
        n, half, mask, keys = self.n, self._half, self._mask, self._keys
        while True:
            left, right = x >> half, x & mask
            for key in keys:
                h = ((right + key) * 0x9E3779B97F4A7C15) & _M64
                h ^= h >> 31
                h = (h * 0xBF58476D1CE4E5B9) & _M64
                h ^= h >> 29
                left, right = right, left ^ (h & mask)
            x = (left << half) | right
            if x < n:
                return x
