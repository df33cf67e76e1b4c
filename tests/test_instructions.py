"""eddytools.instructions: callgrind_annotate's output parsed, settings checked.
(The callgrind runs themselves need valgrind and a stopped server: they are a
measuring tool, run by hand, not a test.)"""

from __future__ import annotations

import pytest

from eddytools import instructions as ins

ANNOTATE = """\
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,234,567,890 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                   file:function
--------------------------------------------------------------------------------
300,000,000 (24.30%)  ???:ExecInterpExpr [/usr/lib/postgresql/15/bin/postgres]
 20,000,000 ( 1.62%)  /e/src/tuple.c:EddyTupleFillSlot [/usr/lib/postgresql/15/lib/eddy.so]
  5,000,000 ( 0.41%)  /e/src/exec.c:eddy_exec_node [/usr/lib/postgresql/15/lib/eddy.so]
  1,000,000 ( 0.08%)  ???:palloc [/usr/lib/postgresql/15/bin/postgres]
"""


def test_parse_annotate_reads_the_total_and_the_functions():
    total, funcs = ins.parse_annotate(ANNOTATE)
    assert total == 1_234_567_890
    assert funcs == {"ExecInterpExpr": 300_000_000, "EddyTupleFillSlot [eddy]": 20_000_000,
                     "eddy_exec_node [eddy]": 5_000_000, "palloc": 1_000_000}
    with pytest.raises(ValueError):
        ins.parse_annotate("no totals here")


def test_arguments_are_checked(capsys):
    with pytest.raises(SystemExit) as e:
        ins.main(["--bindir", "/x", "--datadir", "/y", "--dbname", "d"])
    assert e.value.code == 2        # neither --tpch-query nor --sql
    with pytest.raises(SystemExit) as e:
        ins.main(["--bindir", "/x", "--datadir", "/y", "--dbname", "d", "--tpch-query", "23"])
    assert e.value.code == 2
    assert "--tpch-query" in capsys.readouterr().err
    args = ins.build_parser().parse_args(
        ["--bindir", "/x", "--datadir", "/y", "--dbname", "d", "--sql", "SELECT 1",
         "--set", "work_mem=4MB", "--top", "5"])
    assert args.set == ["work_mem=4MB"] and args.top == 5 and args.sql == "SELECT 1"
