"""make ab's tool (python -m eddytools.ab_builds): an A/B of a build against
itself, OLD = NEW = HEAD, in --quick form (scale 0.02, 6 queries) with 2
rounds, on a data directory and port of its own, end to end: the real
git worktree, the real builds into two private copies of PostgreSQL, the
real Spark loader, a server restarted with each build in each round.

Honest shortcuts, to stay within about two minutes:
* both revisions resolve to the same commit, so the tool compiles the
  worktree once and installs it into both copies (the copies' headers are
  the same files); two different commits are built twice (make ab, by
  hand);
* the tests run as the postgres OS user, who may not write the checkout's
  .git (git worktree add does), so the tool gets a clone of the checkout
  (git clone --shared --no-checkout: its objects are read from the
  checkout's) as --repo; HEAD is the checkout's HEAD, committed code (an
  uncommitted change is not what either build runs).

Assertions on counters, paths and fields, never on time."""

from __future__ import annotations

import collections
import csv
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from eddytools import ab_builds as ab
from eddytools import harness
from eddytools import robustness as rb

TOP = Path(__file__).resolve().parent.parent
PORT = 25451                      # the socket is in the test's own directory
ROUNDS = 2


@pytest.fixture(scope="module")
def ab_run(tmp_path_factory) -> Iterator[tuple[int, Path, str]]:
    """(exit status, the tool's folders' parent, HEAD's commit); the build
    and server folders (two PostgreSQL copies, a data directory) are
    removed after the module."""
    tmp = tmp_path_factory.mktemp("ab")
    commit = harness.git_state()["git_commit"]
    assert commit, "not in a git checkout"
    # safe.directory: the checkout belongs to another OS user than the tests'
    (tmp / "gitconfig").write_text("[safe]\n\tdirectory = *\n")
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(TOP),
                    str(tmp / "repo")], check=True,
                   env=dict(os.environ, GIT_CONFIG_GLOBAL=str(tmp / "gitconfig")))
    status = ab.main(["--old", "HEAD", "--new", commit, "--repo", str(tmp / "repo"),
                      "--quick", "--rounds", str(ROUNDS), "--server-dir", str(tmp / "server"),
                      "--port", str(PORT), "--build-dir", str(tmp / "build"),
                      "--out", str(tmp / "out"), "--no-progress"])
    yield status, tmp, commit
    subprocess.run([str(ab.PGSERVER), "stop", str(tmp / "server")], check=False,
                   env=dict(os.environ, PG_BINDIR=str(tmp / "build/pg-old" / ab.PG_DIRS[0]
                                                      / "bin")))
    shutil.rmtree(tmp / "build", ignore_errors=True)
    shutil.rmtree(tmp / "server", ignore_errors=True)


def load(tmp: Path) -> dict:
    return json.loads((tmp / "out" / "results.json").read_text())


def test_every_answer_matches_and_the_run_is_recorded(ab_run):
    """Exit status 0; every file written; both builds are HEAD's commit;
    every run of every round, build, query and mode is there, without an
    error or a timeout, and every query has one answer throughout."""
    status, tmp, commit = ab_run
    assert status == 0
    for name in ("results.json", "measurements.csv", "summary.csv", "summary.md"):
        assert (tmp / "out" / name).stat().st_size > 0, name
    doc = load(tmp)
    assert doc["errors"] == []
    assert harness.record_problems(doc) == []
    s = doc["settings"]
    assert s["command"].startswith("python -m eddytools.ab_builds --old HEAD")
    assert s["old_commit"] == s["new_commit"] == commit
    assert s["session_settings"] == {
        "jit": "off", "work_mem": "4MB", "max_parallel_workers_per_gather": "0"}
    assert s["scale"] == rb.QUICK_SCALE and s["rounds"] == ROUNDS
    assert doc["load"]["counts"]["ms_sales"] > 0

    names = [q["name"] for q in doc["queries"]]
    assert names == [f"m{i:02d}" for i in range(1, rb.QUICK_QUERIES + 1)]
    runs = doc["runs"]
    want = {(r, b, q, m) for r in range(ROUNDS) for b in ab.BUILDS for q in names
            for m in ab.MODES}
    assert sorted((r["round"], r["build"], r["query"], r["mode"]) for r in runs) == sorted(want)
    answers: dict[str, set] = collections.defaultdict(set)
    for r in runs:
        assert r["error"] is None and not r["timeout"] and r["seconds"] > 0, r
        answers[r["query"]].add((r["rows"], r["digest"]))
    assert all(len(v) == 1 for v in answers.values()), answers
    with open(tmp / "out" / "measurements.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(runs) and {r["build"] for r in rows} == set(ab.BUILDS)


def test_each_build_ran_from_its_own_postgresql(ab_run):
    """Each build was installed into its own copy of PostgreSQL and its
    server ran from it: the pg_config view's PKGLIBDIR and the eddy.so
    mapped into a backend are the copy's; the server was started once for
    the load and once per build and round (old first in round 0, new first
    in round 1), each start a new postmaster, and none is left running."""
    _, tmp, _ = ab_run
    doc = load(tmp)
    builds = doc["builds"]
    assert set(builds) == set(ab.BUILDS)
    for role, b in builds.items():
        lib = tmp / "build" / f"pg-{role}" / ab.PG_DIRS[0] / "lib"
        assert b["copy"] == str(tmp / "build" / f"pg-{role}")
        assert b["pkglibdir"] == str(lib)
        assert b["eddy_library"] == str(lib / "eddy.so")
        assert (lib / "eddy.so").is_file()
        assert b["eddy_settings"]["eddy.enabled"] == "on"
        assert b["eddy_version"] == b["eddy_default_version"]
    assert builds["old"]["pkglibdir"] != builds["new"]["pkglibdir"]
    assert builds["old"]["worktree"] == builds["new"]["worktree"]     # one commit
    starts = doc["starts"]
    assert [(s["round"], s["build"]) for s in starts] == [
        (-1, "old"), (0, "old"), (0, "new"), (1, "new"), (1, "old")]
    for s in starts:
        assert s["pkglibdir"] == builds[s["build"]]["pkglibdir"]
        assert s["eddy_library"] == builds[s["build"]]["eddy_library"]
    assert len({s["started"] for s in starts}) == len(starts)
    assert not (tmp / "server" / "data" / "postmaster.pid").exists()


def test_summary_covers_every_query(ab_run):
    """summary.csv and summary.md: a row per query, every ratio (new/old,
    A/A, eddy/vanilla in each build) with its interval, from both rounds;
    a geometric mean of each ratio over all six queries."""
    _, tmp, _ = ab_run
    doc = load(tmp)
    names = [q["name"] for q in doc["queries"]]
    assert [r["query"] for r in doc["summary"]] == names
    for r in doc["summary"]:
        assert r["rounds"] == ROUNDS and r["errors"] == ""
        for name in ab.RATIOS:
            assert r[f"{name}_low"] <= r[name] <= r[f"{name}_high"], (r["query"], name)
    assert [t["ratio"] for t in doc["totals"]] == list(ab.RATIOS)
    for t in doc["totals"]:
        assert t["queries"] == len(names) and t["rounds"] == ROUNDS and t["left_out"] == []
        assert t["low"] <= t["geomean"] <= t["high"]
    with open(tmp / "out" / "summary.csv") as f:
        assert [r["query"] for r in csv.DictReader(f)] == names
    md = (tmp / "out" / "summary.md").read_text()
    assert "geometric mean" in md and all(f"| {n} |" in md for n in names)


def test_refuses_a_running_server(ab_run, capsys):
    """With the old copy's server running on the test's data directory, the
    tool refuses that data directory, and refuses to install into the copy
    (from another data directory): exit status 1, eddy.so untouched."""
    _, tmp, commit = ab_run
    copy = tmp / "build" / "pg-old"
    lib = copy / ab.PG_DIRS[0] / "lib" / "eddy.so"
    before = lib.stat().st_mtime_ns
    env = dict(os.environ, PG_BINDIR=str(copy / ab.PG_DIRS[0] / "bin"))
    subprocess.run([str(ab.PGSERVER), "start", str(tmp / "server"), str(PORT)], env=env,
                   check=True)
    try:
        argv = ["--old", commit, "--new", commit, "--repo", str(tmp / "repo"), "--quick",
                "--build-dir", str(tmp / "build"), "--out", str(tmp / "refused"),
                "--no-progress"]
        assert ab.main([*argv, "--server-dir", str(tmp / "server")]) == 1
        assert "a server runs on" in capsys.readouterr().err
        assert ab.main([*argv, "--server-dir", str(tmp / "other")]) == 1
        assert f"processes run from {copy}" in capsys.readouterr().err
    finally:
        subprocess.run([str(ab.PGSERVER), "stop", str(tmp / "server")], env=env, check=True)
    assert lib.stat().st_mtime_ns == before
    assert not (tmp / "refused").exists()
