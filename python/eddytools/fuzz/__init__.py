"""Randomized differential testing of eddies: a seeded generator of
select-project-join queries of up to 8 relations with aggregates, ORDER BY /
LIMIT, subqueries, CTEs and set operations around the blocks; a runner that
compares every query with the eddy on and off under every routing policy and
a range of reoptimization frequencies and join methods; a minimiser that
reduces a failing query over its sqlglot tree; regression files that pytest
replays.

Everything is reproducible from seeds: the data from the schema seed (the
``JoinSchema`` of ``joingen``), the queries from the generator seed.

Command line (``make fuzz`` wraps it)::

    python -m eddytools.fuzz --dsn "host=... dbname=..." --queries 5000 --seed 1 \
        [--schema-every 250] [--settings 8] [--save tests/regressions]

Modules: ``generator`` (the queries), ``runner`` (running and comparing),
``minimise`` (reducing failures, regression files), ``cli`` (the campaign
loop and ``python -m eddytools.fuzz``).  The comparison rules are in
``runner``'s documentation.
"""

from eddytools.fuzz.cli import main, run
from eddytools.fuzz.generator import MAX_RELATIONS, FuzzQuery, FuzzQueryGenerator
from eddytools.fuzz.minimise import candidates, minimise, minimise_failure, save_regression
from eddytools.fuzz.runner import (
    JOIN_METHODS,
    POLICIES,
    REOPT_FREQUENCIES,
    BackendCrash,
    Differ,
    Failure,
    Stats,
    clause_probes,
    compare,
    conjunct_groups,
    nested_loop_probes,
    outcome,
    relation_probes,
    scan_probes_of,
    settings_for,
)
from eddytools.sqlast import DIALECT, honest, is_ordered

__all__ = [
    "DIALECT", "JOIN_METHODS", "MAX_RELATIONS", "POLICIES", "REOPT_FREQUENCIES", "BackendCrash",
    "Differ", "Failure", "FuzzQuery", "FuzzQueryGenerator", "Stats", "candidates", "clause_probes",
    "compare", "conjunct_groups", "honest", "is_ordered", "main", "minimise", "minimise_failure",
    "nested_loop_probes", "outcome", "relation_probes", "run", "save_regression",
    "scan_probes_of", "settings_for",
]
