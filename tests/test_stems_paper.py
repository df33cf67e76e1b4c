"""The SteMs paper's experiments (python -m eddytools.stems_paper, make
experiments-stems) on small data: the CLI end to end, every configuration
returning PostgreSQL's answer (an answer that differs is an error and exit
status 3), and the counters the figures are about, never times: the index
cache sends each distinct key to the index once (Figure 7: 250 lookups for
1,000 probes), the plain index join looks every probe up, and the STAIRs
Figure 7 query with access modules runs as an eddy of hybrid joins that
reach a relation through its index (s7stairs)."""

from __future__ import annotations

import json

from eddytools import stems_paper as sp


def test_quick_run_counts_lookups(pg_dsn, tmp_path):
    out = tmp_path / "stems"
    status = sp.main(["--dsn", pg_dsn, "--out", str(out), "--quick", "--no-progress",
                      "--no-plots", "--delay-us", "50", "--figures", "s7,s8f,s7stairs"])
    doc = json.loads((out / "results.json").read_text())
    assert doc["errors"] == [], doc["errors"]
    assert status == 0
    by = {(c["figure"], c["config"]): c for c in doc["counters"]}
    assert all(c["eddy"] for c in doc["counters"]), doc["counters"]

    # Figure 7: the cache answers 750 of R's 1,000 probes, the index join none
    assert by[("s7", "cache")]["lookups"] == 250
    assert by[("s7", "cache")]["cache"] == 750
    assert by[("s7", "indexjoin")]["lookups"] == 1000
    # ... and the cache stays on (R's keys repeat, 3 in 4); Figure 8's R keys
    # are all distinct, so a hybrid that takes the index turns it off at its
    # first judgement, after 64 lookups (mod_hybrid.c, "The cache")
    assert by[("s7", "cache")]["uncached"] == 0
    s8f = by[("s8f", "hybrid")]
    if s8f["lookups"] > 64:
        assert s8f["uncached"] == s8f["lookups"] - 64, s8f

    # the STAIRs query: the adaptive eddy on scans has hash joins only; with
    # access modules its joins are hybrid, and at least one probe went to an
    # index (PostgreSQL reaches customer and lineitem through theirs)
    assert "Hybrid" not in by[("s7stairs", "stairs")]["operators"]
    assert by[("s7stairs", "hybrid")]["operators"].count("Hybrid Join") >= 1
    assert by[("s7stairs", "hybrid")]["lookups"] > 0

    runs = {(r["figure"], r["config"]) for r in doc["runs"]}
    assert runs == {(f, c.name) for f in ("s7", "s8f", "s7stairs")
                    for c in sp.configs(f, 50)}
    rows = {r["rows"] for r in doc["runs"] if r["figure"] == "s7stairs"}
    assert len(rows) == 1
    goals = {(g["figure"], g["goal"]) for g in doc["goals"]}
    assert any(f == "s7stairs" for f, _ in goals)

    # the switch is looked for in both adaptive configurations; the hybrid
    # join refuses migration, and its goal's detail says why
    switch = {g["goal"].split(":")[0]: g for g in doc["goals"]
              if g["figure"] == "s7stairs" and "switch" in g["goal"]}
    assert set(switch) == {"stairs", "hybrid"}, switch
    hyb = by[("s7stairs", "hybrid")]
    assert hyb["migrations"] == 0 and hyb["switch_fraction"] is None, hyb
    assert "hybrid join" in switch["hybrid"]["detail"], switch["hybrid"]

    # every round's stream is kept (the tenths are medians over rounds)
    assert {p["round"] for p in doc["output"]} == {0}
    assert all(p["rows"] <= r["rows"] for p in doc["output"] for r in doc["runs"]
               if (r["figure"], r["config"]) == (p["figure"], p["config"]))


def test_thinned_output_keeps_every_tenth():
    """The output kept per stream has the first point at or past each 1% of
    the rows, so the time of every tenth is the unthinned stream's."""
    points = [(0.0, 0)] + [(0.001 * i, 50 * i) for i in range(1, 801)]
    kept = sp.thin(points)
    assert kept[0] == points[0] and kept[-1] == points[-1]
    assert len(kept) <= 102
    total = points[-1][1]
    for k in range(1, 11):
        want = next(t for t, n in points if n >= total * k / 10)
        assert next(t for t, n in kept if n >= total * k / 10) == want
