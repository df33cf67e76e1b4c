"""The driver JVM's class-data archive (:class:`spark_loader.session.ClassDataArchive`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from spark_loader.session import ClassDataArchive, pid_alive

REPO = Path(__file__).resolve().parents[2]

START = ("import sys; from spark_loader.session import start_spark; "
         "sc = start_spark('local[1]'); "
         "assert sc.parallelize([1, 2], 1).map(lambda x: x * 2).collect() == [2, 4]; "
         "print(sc.getConf().get('spark.driver.extraJavaOptions'))")


def start(cache: Path) -> str:
    """Start Spark in a new process with ``cache``; the driver's JVM options."""
    env = {**os.environ, "SPARK_LOADER_JVM_CACHE": str(cache), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", START], env=env, check=True,
                         capture_output=True, text=True, timeout=300, cwd=cache.parent)
    # (the JVM that crashes on a damaged archive below may leave its hs_err report
    # here despite -XX:ErrorFile: this directory is the test's own)
    return out.stdout.strip().splitlines()[-1]


def wait_for_jvm(cache: Path) -> None:
    for pidfile in cache.glob("*.tmp.pid"):
        pid = int(pidfile.read_text())
        deadline = time.monotonic() + 120
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not pid_alive(pid), "the first JVM did not exit"


def test_class_data_archive_is_made_once_then_used(tmp_path, monkeypatch):
    """The first run makes the archive when its JVM exits, the next one renames it into
    place and maps it, a damaged one is dropped; the setting ``off`` and an unwritable
    cache mean no archive."""
    cache = tmp_path / "cache"
    first = start(cache)
    assert "-XX:ArchiveClassesAtExit=" in first and "SharedArchiveFile" not in first
    assert len(list(cache.glob("*.tmp.pid"))) == 1
    wait_for_jvm(cache)
    second = start(cache)
    archives = list(cache.glob("spark-driver-*.jsa"))
    assert len(archives) == 1 and archives[0].stat().st_size > 1_000_000
    assert f"-XX:SharedArchiveFile={archives[0]}" in second
    assert "ArchiveClassesAtExit" not in second
    assert not list(cache.glob("*.tmp*"))                   # the leftovers are gone

    # a truncated archive makes the JVM fail as it maps it (SIGBUS): the loader drops
    # it and starts without
    head = archives[0].read_bytes()[:5_000_000]
    archives[0].chmod(0o644)                                # the JVM writes it read-only
    archives[0].write_bytes(head)
    third = start(cache)
    assert "SharedArchiveFile" not in third and "ArchiveClassesAtExit" not in third
    assert not archives[0].exists()

    monkeypatch.setenv("SPARK_LOADER_JVM_CACHE", "off")
    assert ClassDataArchive().options == ""
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("SPARK_LOADER_JVM_CACHE", str(blocked / "cache"))
    assert ClassDataArchive().options == ""
