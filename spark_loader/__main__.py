"""``python -m spark_loader <dataset> [options]``; see ``--help``."""

from __future__ import annotations

import sys

from spark_loader import cli


def main() -> int:
    """Entry point of ``python -m spark_loader`` and of the ``spark-loader`` script.

    The process ends right after the load, so the SparkContext it started is not
    stopped: its JVM exits with this process (it watches its standard input) instead
    of first shutting Spark down in about a second and a half."""
    return cli.main(exiting=True)


if __name__ == "__main__":
    sys.exit(main())
