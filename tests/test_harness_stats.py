"""The harness's bootstrap intervals (eddytools.harness.bootstrap_interval,
paired_bootstrap_ci, geomean_bootstrap_ci) on data whose truth is known: no
server, no timing."""

from __future__ import annotations

import math
import random

from eddytools import harness


def lognormal_rounds(rng: random.Random, median: float, sigma: float, n: int) -> list[float]:
    return [median * math.exp(rng.gauss(0.0, sigma)) for _ in range(n)]


def test_interval_covers_the_true_median():
    """Ratios drawn around a true median of 1.2 (lognormal, 10% spread):
    the 95% interval of 30 rounds covers 1.2, is not absurdly wide, and
    over 200 such samples it covers the truth in about 95% of them (the
    percentile bootstrap of a median undercovers a little at n = 30; an
    interval that ignored the data would cover 0% or 100%)."""
    rng = random.Random(48)
    ci = harness.bootstrap_interval(lognormal_rounds(rng, 1.2, 0.1, 30))
    assert ci.low is not None and ci.high is not None
    assert ci.low <= 1.2 <= ci.high
    assert ci.high - ci.low < 0.2
    assert ci.rounds == 30 and ci.level == 0.95
    covered = 0
    for k in range(200):
        sample = lognormal_rounds(rng, 1.2, 0.1, 30)
        c = harness.bootstrap_interval(sample, seed=k, resamples=1000)
        assert c.low is not None and c.high is not None
        covered += c.low <= 1.2 <= c.high
    assert 0.85 * 200 <= covered <= 0.995 * 200, covered


def test_interval_is_seeded_and_degenerates_honestly():
    """The same rounds and seed give the same interval; one round gives a
    zero-width interval on that round; none gives None."""
    values = [1.0, 1.1, 0.9, 1.3, 1.05]
    assert harness.bootstrap_interval(values, seed=3) == harness.bootstrap_interval(values,
                                                                                    seed=3)
    one = harness.bootstrap_interval([1.7])
    assert (one.estimate, one.low, one.high, one.rounds) == (1.7, 1.7, 1.7, 1)
    none = harness.bootstrap_interval([])
    assert none.estimate is None and none.rounds == 0 and none.text() == "-"


def test_pairing_cancels_a_common_speed_step():
    """The machine's speed steps by 3x between rounds; a takes 1.5x b's time
    within each round (small noise).  Paired by round the ratio is 1.5 with
    a narrow interval; the unpaired ratio of a round's a to another
    round's b would range from 0.5 to 4.5."""
    rng = random.Random(7)
    a, b = {}, {}
    for k in range(12):
        speed = 1.0 if k % 2 == 0 else 3.0
        b[k] = speed * math.exp(rng.gauss(0, 0.02))
        a[k] = 1.5 * speed * math.exp(rng.gauss(0, 0.02))
    ci = harness.paired_bootstrap_ci(a, b)
    assert ci.low is not None and ci.high is not None
    assert ci.low <= 1.5 <= ci.high
    assert ci.high - ci.low < 0.1
    # without pairing the spread is the speed step's
    unpaired = [a[i] / b[j] for i in a for j in b]
    assert max(unpaired) / min(unpaired) > 5


def test_paired_interval_skips_rounds_without_both_runs():
    """A round where one side timed out (None) or did not run is left out."""
    a = {0: 2.0, 1: None, 2: 2.0, 3: 2.0}
    b = {0: 1.0, 1: 1.0, 2: 1.0}
    ci = harness.paired_bootstrap_ci(a, b)
    assert ci.rounds == 2 and ci.estimate == 2.0


def test_geomean_interval_pairs_rounds_across_queries():
    """Two queries, one 2x and one 0.5x in every round, under a common speed
    step: the per-round geometric mean is 1 in every round, so the
    estimate and both ends are 1; a round one query lacks is left out."""
    q1 = ({k: 2.0 * (1 + k) for k in range(5)}, {k: 1.0 * (1 + k) for k in range(5)})
    q2 = ({k: 0.5 * (1 + k) for k in range(4)}, {k: 1.0 * (1 + k) for k in range(5)})
    ci = harness.geomean_bootstrap_ci([q1, q2])
    assert ci.rounds == 4
    assert ci.estimate is not None and ci.low is not None and ci.high is not None
    assert math.isclose(ci.estimate, 1.0) and math.isclose(ci.low, 1.0)
    assert math.isclose(ci.high, 1.0)
    assert harness.geometric_mean([2.0, 0.5]) == 1.0
    assert harness.geomean_bootstrap_ci([]).estimate is None


def test_rotated_puts_each_configuration_first_once_per_cycle():
    """Round k runs the configurations rotated by k: over len(items) rounds
    each one runs first, second and third exactly once."""
    modes = ("on", "off", "aa")
    orders = [harness.rotated(modes, k) for k in range(6)]
    assert orders[0] == ["on", "off", "aa"] and orders[1] == ["off", "aa", "on"]
    assert orders[3] == orders[0] and orders[4] == orders[1]
    for position in range(3):
        assert sorted(o[position] for o in orders[:3]) == sorted(modes)
    assert harness.rotated((), 5) == []
