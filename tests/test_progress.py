"""The Spark loader's progress display (``spark_loader.progress``): a tqdm bar
on a terminal, plain periodic lines elsewhere, nothing when disabled.  No
Spark, no database."""

from __future__ import annotations

import io

from spark_loader.progress import Progress, human


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_gets_a_bar_that_log_lines_do_not_break():
    """On a terminal: a bar with the counts and the detail text, log lines
    printed whole above it, and the bar erased by clear()."""
    out = Terminal()
    p = Progress(stream=out)
    p.status(3, 10, "2 running, 1.00k rows")
    p.log("t1: loaded")
    p.status(7, 10, "1 running, 2.00k rows")
    p.clear()
    text = out.getvalue()
    assert "loading" in text and "3/10" in text and "7/10" in text, text
    assert "2 running, 1.00k rows" in text
    assert "t1: loaded\n" in text
    # clear(): the bar's line is overwritten with blanks, the cursor back at its start
    last_line = text.rsplit("\n", 1)[-1]
    assert last_line.endswith("\r") and last_line[:-1].rsplit("\r", 1)[-1].strip() == "", \
        repr(last_line)


def test_pipe_gets_plain_periodic_lines_and_quiet_gets_nothing():
    """Not a terminal: no control characters, a plain status line at most
    every plain_interval seconds, log lines as they come; disabled, nothing
    at all."""
    out = io.StringIO()
    p = Progress(stream=out, plain_interval=0)
    p.status(1, 4, "1 running")
    p.log("t1: loaded")
    p.status(4, 4, "0 running")
    p.clear()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("loading: 1/4 parts, 1 running, ") and lines[0].endswith(" s")
    assert lines[1] == "t1: loaded"
    assert lines[2].startswith("loading: 4/4 parts, 0 running")
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()

    slow = io.StringIO()
    p = Progress(stream=slow, plain_interval=3600)
    p.status(1, 4, "1 running")
    p.log("kept")
    assert slow.getvalue() == "kept\n"

    quiet = Terminal()
    p = Progress(enabled=False, stream=quiet)
    p.status(1, 4, "x")
    p.log("y")
    p.clear()
    assert quiet.getvalue() == ""


def test_human():
    """Counts in k, M, G with two decimals."""
    assert [human(n) for n in (999, 1234, 1_234_567, 2e9)] == ["999", "1.23k", "1.23M", "2.00G"]
