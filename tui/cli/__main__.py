"""``python -m tui.cli``: the same as the ``hermes-admin`` console script."""

import sys

from tui.cli.entry import main

sys.exit(main())
