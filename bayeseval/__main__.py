"""Allow ``python -m bayeseval``."""

import sys

from bayeseval.cli import main

sys.exit(main())
