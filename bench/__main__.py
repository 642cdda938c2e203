"""``python -m bench SCENARIO [options]``: see :mod:`bench.runner`."""

import sys

from bench.runner import main

sys.exit(main())
