"""The SparkContext: explicit settings, scratch space outside the working directory.

The loader needs only Spark's core (``parallelize`` and ``mapPartitions`` of its own
task descriptions), so it starts a bare ``SparkContext``: a ``SparkSession`` would
also initialise Spark SQL, about one second more of JVM start-up on 2 cores.

Every setting that could change how work is split or scheduled is set here
explicitly (adaptive query execution off, fixed shuffle partitions, no speculation,
no dynamic allocation), although the loader's output does not depend on them anyway:
each table is cut into parts by the loader itself, one part per task, and every
row is a function of the parameters and its row number only.

Spark scratch files (local dirs, warehouse, Derby, Ivy, the JVM's tmpdir) go into a
fresh temporary directory, never into the current directory, so the loader can run
from a read-only checkout.  The package itself is shipped to the executors as a
zip (``addPyFile``), so a cluster needs only pyspark, psycopg (and tpchgen-cli for
TPC-H) installed, not this project.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import SparkContext

DEFAULT_MASTER = "local[*]"
DRIVER_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

FIXED_CONF = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.adaptive.coalescePartitions.enabled": "false",
    "spark.sql.adaptive.skewJoin.enabled": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.speculation": "false",
    "spark.dynamicAllocation.enabled": "false",
    "spark.task.cpus": "1",
    "spark.python.worker.reuse": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}

_LOG4J2 = """\
# Spark's loggers configured at the root's level: then the PySpark shell does not
# announce a level change of its own on stderr
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.spark.name = org.apache.spark
logger.spark.level = {level}
logger.sparkproject.name = org.sparkproject
logger.sparkproject.level = {level}
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = {level}
logger.netty.name = io.netty
logger.netty.level = {level}
"""


def scratch_dir() -> str:
    """A private temporary directory, removed when the process exits."""
    path = tempfile.mkdtemp(prefix="spark_loader-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


# --------------------------------------------------------------------------- class data
#
# Most of the driver JVM's start-up is loading and verifying Spark's classes.  Java's
# application class-data sharing keeps them, parsed and verified, in an archive that
# later JVMs map: Spark starts in ~1.0 s instead of ~1.9 s and runs its first job
# ~0.3 s sooner (2 cores).  The archive is made by the first run
# (``-XX:ArchiveClassesAtExit``: the JVM writes it when it exits) into the user's
# cache, under a name that depends on the JVM and on Spark's jars, and used by the
# runs after it.  The JVM writes the archive's header last and checks it, and the
# jars and the JVM it was made with, when it maps it: an unusable archive is ignored
# (``-Xshare:auto``), never fatal.  Since the JVM usually outlives the Python process
# that started it, its archive is written under a temporary name beside a file
# holding the JVM's process id; a later run renames it into place once that process
# is gone.  ``SPARK_LOADER_JVM_CACHE``: another directory, or ``off``.

_CDS_QUIET = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off -Xlog:class+path=off"


def _cache_dir() -> Path | None:
    setting = os.environ.get("SPARK_LOADER_JVM_CACHE", "")
    if setting.lower() in ("off", "0", "no", "false"):
        return None
    if setting:
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "spark_loader"


def _archive_key() -> str | None:
    """What the archive depends on: the JVM binary and Spark's jars (None: unknown)."""
    import hashlib

    import pyspark

    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    home = Path(os.path.realpath(java)).parent.parent
    digest = hashlib.sha1()
    for path in (home / "lib" / "server" / "libjvm.so", home / "lib" / "modules"):
        with contextlib.suppress(OSError):
            st = path.stat()
            digest.update(f"{path}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    jars = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent) / "jars"
    with contextlib.suppress(OSError):
        for jar in sorted(jars.iterdir()):
            st = jar.stat()
            digest.update(f"{jar}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    digest.update(f"{pyspark.__version__} {DRIVER_JVM_OPTIONS}".encode())
    return digest.hexdigest()[:16]


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (an exited one not yet reaped does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    return True


class ClassDataArchive:
    """The driver JVM's class-data archive in the cache: its JVM options, and the
    recording of the JVM that writes a new one."""

    def __init__(self) -> None:
        self.options = ""
        self.pending: Path | None = None      # the archive this JVM will write
        self.mapped: Path | None = None       # the archive this JVM maps
        cache = _cache_dir()
        key = _archive_key() if cache is not None else None
        if cache is None or key is None:
            return
        try:
            cache.mkdir(parents=True, exist_ok=True)
            final = cache / f"spark-driver-{key}.jsa"
            busy = self._promote(cache, key, final)
            if final.is_file():
                self.mapped = final
                self.options = f"-XX:SharedArchiveFile={final} {_CDS_QUIET}"
                return
            if busy:
                return                          # another JVM will write it
            fd, tmp = tempfile.mkstemp(prefix=f"spark-driver-{key}.", suffix=".tmp",
                                       dir=cache)
            os.close(fd)
            os.unlink(tmp)                      # the JVM creates it when it exits
        except OSError:
            return                              # an unwritable cache: no archive
        self.pending = Path(tmp)
        self.options = f"-XX:ArchiveClassesAtExit={tmp} {_CDS_QUIET}"

    @staticmethod
    def _promote(cache: Path, key: str, final: Path) -> bool:
        """Rename into place the archive of a JVM that has exited, drop leftovers;
        whether a JVM that will write one still runs."""
        busy = False
        for pidfile in cache.glob(f"spark-driver-{key}.*.tmp.pid"):
            tmp = pidfile.with_suffix("")
            try:
                pid = int(pidfile.read_text().strip() or "0")
            except (OSError, ValueError):
                pid = 0
            if pid and pid_alive(pid):
                busy = True
                continue
            with contextlib.suppress(OSError):
                if tmp.is_file() and tmp.stat().st_size > 0 and not final.exists():
                    os.replace(tmp, final)
                tmp.unlink(missing_ok=True)
                pidfile.unlink(missing_ok=True)
        for tmp in cache.glob(f"spark-driver-{key}.*.tmp"):   # a JVM without a pid file
            with contextlib.suppress(OSError):
                if not Path(f"{tmp}.pid").exists() and time.time() - tmp.stat().st_mtime > 600:
                    tmp.unlink()
        return busy

    def discard(self) -> None:
        """Remove the archive the JVM could not start with."""
        if self.mapped is not None:
            with contextlib.suppress(OSError):
                self.mapped.unlink()
        self.mapped = None
        self.options = ""

    def started(self, sc: SparkContext) -> None:
        """Record the process id of the JVM that will write the archive."""
        if self.pending is None:
            return
        with contextlib.suppress(Exception):
            jvm = sc._jvm
            assert jvm is not None     # a started context has its gateway
            pid = jvm.java.lang.ProcessHandle.current().pid()
            Path(f"{self.pending}.pid").write_text(f"{pid}\n")


def start_spark(master: str = DEFAULT_MASTER, conf: Mapping[str, str] | None = None,
                app_name: str = "spark_loader", log_level: str = "fatal") -> SparkContext:
    """A SparkContext with the loader's explicit settings (``conf`` overrides them).

    The Spark SQL settings of :data:`FIXED_CONF` are set too, so that a SparkSession
    a caller builds on this context gets them."""
    scratch = scratch_dir()
    log4j = os.path.join(scratch, "log4j2.properties")
    with open(log4j, "w") as f:
        f.write(_LOG4J2.format(level=log_level))
    archive = ClassDataArchive()
    # The driver JVM only schedules tasks and relays a few bytes per task: the quick
    # C1 compiler and the serial collector halve its start-up time on a small machine.
    # A JVM crash report goes to the scratch directory, not into the working directory.
    java_opts = (f"{DRIVER_JVM_OPTIONS} -Djava.io.tmpdir={scratch} "
                 f"-Dderby.system.home={scratch}/derby -XX:ErrorFile={scratch}/hs_err_%p.log "
                 f"-Dlog4j2.configurationFile=file:{log4j}")
    user = dict(conf or {})
    user_opts = user.pop("spark.driver.extraJavaOptions", "")   # theirs last: the JVM
    settings = {                                                 # keeps the last
        **FIXED_CONF,
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.local.dir": os.path.join(scratch, "local"),
        "spark.sql.warehouse.dir": os.path.join(scratch, "warehouse"),
        "spark.jars.ivy": os.path.join(scratch, "ivy"),
        "spark.driver.extraJavaOptions": " ".join(
            o for o in (java_opts, archive.options, user_opts) if o),
        **user,
    }
    if master.startswith("local"):
        # a local run needs no network: avoid the "hostname resolves to loopback" probe
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # local workers run this very interpreter (its packages: psycopg, tpchgen-cli)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf

    spark_conf = SparkConf()
    for key, value in settings.items():
        spark_conf.set(key, value)
    quiet = log_level == "fatal"
    try:
        sc = _context(spark_conf, scratch, quiet)
    except Exception:
        if not archive.mapped:
            raise
        # a damaged archive (a truncated file makes the JVM fail as it maps it): drop
        # it and start without; the next run makes a new one
        archive.discard()
        spark_conf.set("spark.driver.extraJavaOptions",
                       " ".join(o for o in (java_opts, user_opts) if o))
        sc = _context(spark_conf, scratch, quiet)
    archive.started(sc)
    return sc


def _context(spark_conf, scratch: str, quiet: bool) -> SparkContext:
    """The active SparkContext, else a new one.  ``quiet``: the JVM's standard output
    and error go to ``jvm.log`` in the scratch directory (shown if it fails to start),
    not to ours: then nothing waiting for the end of our output (a pipe, a test
    harness) waits for the JVM's own shutdown after this process has exited."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if not quiet or SparkContext._active_spark_context is not None:
        return SparkContext.getOrCreate(conf=spark_conf)
    path = os.path.join(scratch, "jvm.log")
    with open(path, "ab") as log:
        try:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": log, "stderr": log})
        except Exception as exc:
            with open(path, "rb") as f:
                said = f.read()[-2000:].decode(errors="replace").strip()
            raise RuntimeError(f"the Spark driver JVM did not start ({exc})"
                               + (f":\n{said}" if said else "")) from exc
    return SparkContext(conf=spark_conf, gateway=gateway)


def spark_context(spark) -> SparkContext:
    """The SparkContext of ``spark``: a SparkContext, or a SparkSession."""
    return getattr(spark, "sparkContext", spark)


def ship_package(spark) -> None:
    """Make ``spark_loader`` importable on the executors (once per SparkContext)."""
    sc = spark_context(spark)
    if getattr(sc, "_spark_loader_shipped", False):
        return
    package = Path(__file__).resolve().parent
    archive = os.path.join(scratch_dir(), "spark_loader.zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package.glob("*.py")):
            zf.write(path, f"spark_loader/{path.name}")
    sc.addPyFile(archive)
    sc._spark_loader_shipped = True  # type: ignore[attr-defined]
