"""``python -m pinetime_emu``: the ``pinetime-emu`` command."""
import sys

from pinetime_emu.cli import main

sys.exit(main())
