"""``python -m eddytools.fuzz``: see ``eddytools.fuzz.cli``."""

import sys

from eddytools.fuzz.cli import main

sys.exit(main())
