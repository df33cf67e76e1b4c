"""The misestimation data set (issue 48): a snowflake schema whose data
defeats PostgreSQL's estimates, for the robustness workload of
``eddytools.misest`` and ``eddytools.robustness`` (docs/robustness/README.md).

Two fact tables and eleven dimensions (rows at ``--scale 1``; the tables
marked * grow with the scale, the others are fixed)::

    ms_sales*    1,000,000  sale_id, date_id, cust_id, prod_id, store_id,
                            promo_id, ship_id, qty, price, a, b, code
    ms_returns*    150,000  ret_id, sale_id, cust_id, prod_id, reason_id,
                            date_id, amount
    ms_customer*    60,000  cust_id, city_id, state_id, age, income_band,
                            segment, a, b
    ms_product*     20,000  prod_id, brand_id, category_id, price, weight
    ms_city*         2,000  city_id, state_id, population
    ms_state            50  state_id, region
    ms_category        200  category_id, dept_id
    ms_dept             20  dept_id, kind
    ms_date          3,000  date_id, year, month, quarter, dow, holiday
    ms_store           400  store_id, city_id, state_id, size
    ms_promo         1,000  promo_id, kind, pct
    ms_ship             20  ship_id, carrier, speed
    ms_reason           40  reason_id, grp

What misleads the planner (each value below is a formula of the row's key
and the seed, so a task generates its range of rows without the others):

* **correlated columns**: ``state_id`` is a function of ``city_id`` (a
  city's state, ``city_id % 50``) in ms_customer and ms_store;
  ``income_band`` is ``age / 10`` for 95% of customers; ``category_id`` is
  ``brand_id / 10``; ``quarter`` is a function of ``month``; in ms_sales and
  ms_customer ``b = a`` for 95% of rows (``a`` uniform over 0..99); a
  return's ``cust_id`` and ``prod_id`` are those of its sale.  The planner
  multiplies the selectivities of predicates on such columns.
* **skewed keys** (Zipf): ms_sales.cust_id (exponent 1.1 over the
  customers), prod_id (1.0), store_id (1.2) and promo_id (1.3, most sales
  have promotion 0), ms_returns.reason_id (1.2), ms_customer.city_id (1.0).
  Rank r is key ``(r * P) % n`` for a prime P: the hottest key is 0 (the
  sales without a promotion have promo_id 0), the next ones are scattered
  over the key range.
* **opaque predicates**: ``code`` (uniform 0..9,999) is what the
  workload's PL/pgSQL functions read (eddytools.misest.FUNCTIONS).
* **stale statistics**: sales use the first 2,000 dates only; dates
  2,000..2,999 exist in ms_date but have no sale until the workload's
  runner moves sales there after ANALYZE (eddytools.misest.STALE_SQL).

``BASE_ROWS`` holds the cardinalities; :meth:`Tables.row` is the one
definition of every column; :func:`chunks` is what a Spark task calls.  The
two fact tables are generated a batch at a time with numpy
(:meth:`Tables.sales_batch`, :meth:`Tables.returns_batch`: the same
splitmix64, the same floats, the same Zipf search, so the same rows as
:meth:`Tables.row`, which tests/test_robustness.py checks; the checksums of
a scale-1 load did not change): in pure Python a sale takes about 30 us, and
scale 1 took 91 s to load on the shared machine, 25 s with the batches.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Iterator

import numpy as np

BASE_ROWS: dict[str, int] = {
    "ms_sales": 1_000_000, "ms_returns": 150_000, "ms_customer": 60_000,
    "ms_product": 20_000, "ms_city": 2_000, "ms_state": 50, "ms_category": 200,
    "ms_dept": 20, "ms_date": 3_000, "ms_store": 400, "ms_promo": 1_000, "ms_ship": 20,
    "ms_reason": 40,
}
SCALED = ("ms_sales", "ms_returns", "ms_customer", "ms_product", "ms_city")
SALE_DATES = 2_000          # dates with sales when loaded (the rest: see STALE_SQL)
STATES = 50
BATCH_ROWS = 8192

COLUMNS: dict[str, tuple[str, ...]] = {
    "ms_sales": ("sale_id", "date_id", "cust_id", "prod_id", "store_id", "promo_id",
                 "ship_id", "qty", "price", "a", "b", "code"),
    "ms_returns": ("ret_id", "sale_id", "cust_id", "prod_id", "reason_id", "date_id",
                   "amount"),
    "ms_customer": ("cust_id", "city_id", "state_id", "age", "income_band", "segment",
                    "a", "b"),
    "ms_product": ("prod_id", "brand_id", "category_id", "price", "weight"),
    "ms_city": ("city_id", "state_id", "population"),
    "ms_state": ("state_id", "region"),
    "ms_category": ("category_id", "dept_id"),
    "ms_dept": ("dept_id", "kind"),
    "ms_date": ("date_id", "year", "month", "quarter", "dow", "holiday"),
    "ms_store": ("store_id", "city_id", "state_id", "size"),
    "ms_promo": ("promo_id", "kind", "pct"),
    "ms_ship": ("ship_id", "carrier", "speed"),
    "ms_reason": ("reason_id", "grp"),
}
TABLES = tuple(COLUMNS)
# secondary indexes (the first column is each table's primary key); none on
# ms_sales.date_id: with one, the planner would read the column's true end
# from the index (get_actual_variable_range) and see past stale statistics
INDEXES: dict[str, tuple[tuple[str, ...], ...]] = {
    "ms_sales": (("cust_id",), ("prod_id",)),
    "ms_returns": (("sale_id",),),
    "ms_customer": (("city_id",),),
}


def rows_of(table: str, scale: float) -> int:
    """The cardinality of ``table`` at ``scale`` (at least 10 rows)."""
    n = BASE_ROWS[table]
    return max(10, round(n * scale)) if table in SCALED else n


class Rng:
    """Deterministic uniform numbers keyed by (seed, table, row, column):
    splitmix64 of a per-table key, so a row's values never depend on how
    the rows were split into tasks."""

    def __init__(self, seed: int, table: str) -> None:
        self.base = int.from_bytes(hashlib.blake2b(f"{seed}/{table}".encode(),
                                                   digest_size=8).digest(), "little")

    def u(self, key: int, col: int) -> float:
        z = (self.base + (key * 64 + col + 1) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        z ^= z >> 31
        return (z >> 11) / float(1 << 53)

    def below(self, key: int, col: int, n: int) -> int:
        """A uniform integer 0 .. n-1 for (key, col)."""
        return min(n - 1, int(self.u(key, col) * n))

    def u_array(self, keys: np.ndarray, col: int) -> np.ndarray:
        """:meth:`u` of every key of ``keys`` (uint64), in numpy (wrapping
        uint64 arithmetic, as the masks do in :meth:`u`)."""
        with np.errstate(over="ignore"):
            z = np.uint64(self.base) + (keys * np.uint64(64) + np.uint64(col + 1)) \
                * np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z ^= z >> np.uint64(31)
        return (z >> np.uint64(11)).astype(np.float64) / float(1 << 53)

    def below_array(self, keys: np.ndarray, col: int, n: int) -> np.ndarray:
        """:meth:`below` of every key of ``keys``."""
        return np.minimum(n - 1, (self.u_array(keys, col) * n).astype(np.int64))


class Zipf:
    """Keys 0..n-1 drawn with probability proportional to 1 / rank**s; rank
    r is key ``(r * P) % n`` for a prime P that does not divide n (the hot
    keys scattered over the range)."""

    def __init__(self, n: int, s: float) -> None:
        weights = [1.0 / (r + 1) ** s for r in range(n)]
        total = math.fsum(weights)
        acc = 0.0
        self.cdf = []
        for w in weights:
            acc += w / total
            self.cdf.append(acc)
        self.n = n
        self.prime = next(p for p in (7919, 7927, 7933, 7937) if n % p)
        self.cdf_array = np.array(self.cdf)

    def key(self, u: float) -> int:
        rank = min(self.n - 1, bisect.bisect_left(self.cdf, u))
        return (rank * self.prime) % self.n

    def keys(self, u: np.ndarray) -> np.ndarray:
        """:meth:`key` of every value of ``u``."""
        rank = np.minimum(self.n - 1, np.searchsorted(self.cdf_array, u, side="left"))
        return (rank * self.prime) % self.n


class Tables:
    """The generators of one data set (seed, scale): Zipf tables built once."""

    def __init__(self, seed: int, scale: float) -> None:
        self.seed, self.scale = seed, scale
        self.n = {t: rows_of(t, scale) for t in TABLES}
        self.rng = {t: Rng(seed, t) for t in TABLES}
        self._zipf: dict[tuple[int, float], Zipf] = {}

    def zipf(self, n: int, s: float) -> Zipf:
        if (n, s) not in self._zipf:
            self._zipf[(n, s)] = Zipf(n, s)
        return self._zipf[(n, s)]

    def city_state(self, city: int) -> int:
        return city % STATES

    def customer_city(self, cust: int) -> int:
        return self.zipf(self.n["ms_city"], 1.0).key(self.rng["ms_customer"].u(cust, 0))

    def sale(self, i: int) -> tuple[int, ...]:
        r, n = self.rng["ms_sales"], self.n
        date = r.below(i, 0, SALE_DATES)
        cust = self.zipf(n["ms_customer"], 1.1).key(r.u(i, 1))
        prod = self.zipf(n["ms_product"], 1.0).key(r.u(i, 2))
        store = self.zipf(n["ms_store"], 1.2).key(r.u(i, 3))
        promo = self.zipf(n["ms_promo"], 1.3).key(r.u(i, 4))
        ship = r.below(i, 5, n["ms_ship"])
        qty = 1 + r.below(i, 6, 20)
        price = 1 + r.below(i, 7, 1000)
        a = r.below(i, 8, 100)
        b = a if r.u(i, 9) < 0.95 else r.below(i, 10, 100)
        code = r.below(i, 11, 10_000)
        return (i, date, cust, prod, store, promo, ship, qty, price, a, b, code)

    def sales_batch(self, ids: np.ndarray) -> list[np.ndarray]:
        """The columns of the sales ``ids`` (uint64): :meth:`sale` in numpy."""
        r, n = self.rng["ms_sales"], self.n
        a = r.below_array(ids, 8, 100)
        b = np.where(r.u_array(ids, 9) < 0.95, a, r.below_array(ids, 10, 100))
        return [ids.astype(np.int64), r.below_array(ids, 0, SALE_DATES),
                self.zipf(n["ms_customer"], 1.1).keys(r.u_array(ids, 1)),
                self.zipf(n["ms_product"], 1.0).keys(r.u_array(ids, 2)),
                self.zipf(n["ms_store"], 1.2).keys(r.u_array(ids, 3)),
                self.zipf(n["ms_promo"], 1.3).keys(r.u_array(ids, 4)),
                r.below_array(ids, 5, n["ms_ship"]), 1 + r.below_array(ids, 6, 20),
                1 + r.below_array(ids, 7, 1000), a, b, r.below_array(ids, 11, 10_000)]

    def returns_batch(self, ids: np.ndarray) -> list[np.ndarray]:
        """The columns of the returns ``ids`` (uint64): :meth:`row` in numpy."""
        r, n = self.rng["ms_returns"], self.n
        sale = r.below_array(ids, 0, n["ms_sales"])
        s = self.sales_batch(sale.astype(np.uint64))
        reason = self.zipf(n["ms_reason"], 1.2).keys(r.u_array(ids, 1))
        date = np.minimum(n["ms_date"] - 1, s[1] + r.below_array(ids, 2, 60))
        return [ids.astype(np.int64), sale, s[2], s[3], reason, date,
                1 + r.below_array(ids, 3, 500)]

    def row(self, table: str, i: int) -> tuple[int, ...]:
        """Row ``i`` (its primary key) of ``table``, as integers."""
        r, n = self.rng[table], self.n
        if table == "ms_sales":
            return self.sale(i)
        if table == "ms_returns":
            sale = r.below(i, 0, n["ms_sales"])
            s = self.sale(sale)
            reason = self.zipf(n["ms_reason"], 1.2).key(r.u(i, 1))
            return (i, sale, s[2], s[3], reason, min(n["ms_date"] - 1, s[1] + r.below(i, 2, 60)),
                    1 + r.below(i, 3, 500))
        if table == "ms_customer":
            city = self.customer_city(i)
            age = 18 + r.below(i, 1, 70)
            band = age // 10 if r.u(i, 2) < 0.95 else r.below(i, 3, 9)
            a = r.below(i, 5, 100)
            b = a if r.u(i, 6) < 0.95 else r.below(i, 7, 100)
            return (i, city, self.city_state(city), age, band, r.below(i, 4, 10), a, b)
        if table == "ms_product":
            brand = r.below(i, 0, 2_000)
            return (i, brand, brand // 10, 1 + r.below(i, 1, 1000), 1 + r.below(i, 2, 100))
        if table == "ms_city":
            return (i, self.city_state(i), 1000 + r.below(i, 0, 1_000_000))
        if table == "ms_state":
            return (i, i % 5)
        if table == "ms_category":
            return (i, i % 20)
        if table == "ms_dept":
            return (i, i % 4)
        if table == "ms_date":
            month = 1 + (i // 30) % 12
            return (i, 2000 + i // 360, month, 1 + (month - 1) // 3, i % 7,
                    1 if r.u(i, 0) < 0.05 else 0)
        if table == "ms_store":
            city = r.below(i, 0, n["ms_city"])
            return (i, city, self.city_state(city), 1 + r.below(i, 1, 10))
        if table == "ms_promo":
            return (i, r.below(i, 0, 10), 0 if i == 0 else 5 + r.below(i, 1, 45))
        if table == "ms_ship":
            return (i, i % 5, 1 + i % 4)
        if table == "ms_reason":
            return (i, i % 8)
        raise KeyError(table)


def chunks(params: dict, lo: int, hi: int) -> Iterator[bytes]:
    """COPY text for rows ``lo .. hi-1`` (primary keys) of one table.

    ``params``: ``table``, ``seed``, ``scale``."""
    gen = Tables(params["seed"], params["scale"])
    table = params["table"]
    batch = BATCHES.get(table)
    for start in range(lo, hi, BATCH_ROWS):
        stop = min(start + BATCH_ROWS, hi)
        if batch is not None:
            cols = batch(gen, np.arange(start, stop, dtype=np.uint64))
            values = np.column_stack(cols).ravel().tolist()
            line = "\t".join(["%d"] * len(cols)) + "\n"
            yield ((line * (stop - start)) % tuple(values)).encode()
        else:
            yield "".join("\t".join(map(str, gen.row(table, i))) + "\n"
                          for i in range(start, stop)).encode()


# the tables generated a batch at a time (numpy)
BATCHES = {"ms_sales": Tables.sales_batch, "ms_returns": Tables.returns_batch}
