"""Progress on stderr: a status line redrawn in place on a terminal, periodic lines otherwise."""

from __future__ import annotations

import sys
import threading
import time


def human(n: float) -> str:
    """``1234567`` -> ``1.23M``."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return f"{n:.0f}"


class Progress:
    """Permanent log lines plus one transient status line (thread-safe)."""

    def __init__(self, enabled: bool = True, stream=None, plain_interval: float = 10.0) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.plain_interval = plain_interval
        self._last_plain = time.monotonic()
        self._line = ""
        self._lock = threading.Lock()

    def log(self, message: str) -> None:
        """A permanent line (the status line is redrawn below it)."""
        if not self.enabled:
            return
        with self._lock:
            if self._line:
                self.stream.write("\r\x1b[K")
            self.stream.write(message + "\n")
            if self._line:
                self.stream.write(self._line)
            self.stream.flush()

    def status(self, line: str) -> None:
        """Show ``line``: redrawn in place on a terminal, else a line every few seconds."""
        if not self.enabled:
            return
        with self._lock:
            if self.tty:
                self.stream.write("\r\x1b[K" + line)
                self._line = line
            else:
                now = time.monotonic()
                if now - self._last_plain < self.plain_interval:
                    return
                self._last_plain = now
                self.stream.write(line + "\n")
            self.stream.flush()

    def clear(self) -> None:
        """Remove the status line."""
        if not self._line:
            return
        with self._lock:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._line = ""
