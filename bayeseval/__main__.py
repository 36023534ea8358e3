"""Allow ``python -m bayeseval``."""

import sys

from bayeseval.cli.main import main

sys.exit(main())
