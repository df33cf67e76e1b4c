"""The SparkSession: explicit settings, scratch space outside the working directory.

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
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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


def build_session(master: str = DEFAULT_MASTER, conf: Mapping[str, str] | None = None,
                  app_name: str = "spark_loader", log_level: str = "fatal") -> SparkSession:
    """A SparkSession with the loader's explicit settings (``conf`` overrides them)."""
    scratch = scratch_dir()
    log4j = os.path.join(scratch, "log4j2.properties")
    with open(log4j, "w") as f:
        f.write(_LOG4J2.format(level=log_level))
    # The driver JVM only schedules tasks and relays a few bytes per task: the quick
    # C1 compiler and the serial collector halve its start-up time on a small machine.
    java_opts = (f"{DRIVER_JVM_OPTIONS} -Djava.io.tmpdir={scratch} "
                 f"-Dderby.system.home={scratch}/derby "
                 f"-Dlog4j2.configurationFile=file:{log4j}")
    user = dict(conf or {})
    if "spark.driver.extraJavaOptions" in user:      # theirs last: the JVM keeps the last
        java_opts += " " + user.pop("spark.driver.extraJavaOptions")
    settings = {
        **FIXED_CONF,
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.local.dir": os.path.join(scratch, "local"),
        "spark.sql.warehouse.dir": os.path.join(scratch, "warehouse"),
        "spark.jars.ivy": os.path.join(scratch, "ivy"),
        "spark.driver.extraJavaOptions": java_opts,
        **user,
    }
    if master.startswith("local"):
        # a local run needs no network: avoid the "hostname resolves to loopback" probe
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # local workers run this very interpreter (its packages: psycopg, tpchgen-cli)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    spark_conf = SparkConf()
    for key, value in settings.items():
        spark_conf.set(key, value)
    return SparkSession.builder.config(conf=spark_conf).getOrCreate()


def ship_package(session: SparkSession) -> None:
    """Make ``spark_loader`` importable on the executors (once per SparkContext)."""
    sc = session.sparkContext
    if getattr(sc, "_spark_loader_shipped", False):
        return
    package = Path(__file__).resolve().parent
    archive = os.path.join(scratch_dir(), "spark_loader.zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package.glob("*.py")):
            zf.write(path, f"spark_loader/{path.name}")
    sc.addPyFile(archive)
    sc._spark_loader_shipped = True  # type: ignore[attr-defined]
