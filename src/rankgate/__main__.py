"""``python -m rankgate`` runs the command line."""

import sys

from rankgate.cli import main

sys.exit(main())
