"""Progress on stderr: a tqdm bar on a terminal, a plain line every few seconds
otherwise, and permanent log lines that never break the bar."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from tqdm import tqdm


def human(n: float) -> str:
    """``1234567`` -> ``1.23M``."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return f"{n:.0f}"


class Progress:
    """Permanent log lines plus one progress display (thread-safe).

    On a terminal the display is a tqdm bar, redrawn in place and erased by
    :meth:`clear`; on anything else (a log file, a pipe) it is a plain line
    every ``plain_interval`` seconds.  Disabled, nothing is written at all.
    """

    def __init__(self, enabled: bool = True, stream: TextIO | None = None,
                 plain_interval: float = 10.0, desc: str = "loading", unit: str = "part") -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.plain_interval = plain_interval
        self.desc = desc
        self.unit = unit
        self._started: float | None = None
        self._last_plain = time.monotonic()
        self._bar: tqdm | None = None
        self._lock = threading.Lock()

    def log(self, message: str) -> None:
        """A permanent line (above the bar, which tqdm redraws below it)."""
        if not self.enabled:
            return
        with self._lock:
            if self._bar is not None:
                self._bar.write(message, file=self.stream)
            else:
                self.stream.write(message + "\n")
                self.stream.flush()

    def status(self, done: int, total: int, detail: str = "") -> None:
        """``done`` of ``total`` units, with a ``detail`` text (rates, counts)."""
        if not self.enabled:
            return
        with self._lock:
            now = time.monotonic()
            if self._started is None:
                self._started = now
            if self.tty:
                if self._bar is None:
                    self._bar = tqdm(total=total, desc=self.desc, unit=self.unit,
                                     file=self.stream, dynamic_ncols=True, leave=False)
                self._bar.total = total
                self._bar.n = done
                self._bar.set_postfix_str(detail, refresh=False)
                self._bar.refresh()
                return
            if now - self._last_plain < self.plain_interval:
                return
            self._last_plain = now
            text = f"{self.desc}: {done}/{total} {self.unit}s"
            if detail:
                text += f", {detail}"
            self.stream.write(f"{text}, {now - self._started:.0f} s\n")
            self.stream.flush()

    def clear(self) -> None:
        """Remove the progress display."""
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
