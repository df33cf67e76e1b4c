"""``python -m spark_loader <dataset> [options]``; see ``--help``."""

from __future__ import annotations

import sys

from spark_loader.cli import main

if __name__ == "__main__":
    sys.exit(main())
