"""The ``pinetime-emu`` command as installed: makes sure the names ``emu``
and ``frontends`` are this package's (one line and status 2 if another
package holds one), then runs frontends/cli.py."""
from __future__ import annotations

import sys
from typing import Optional


def main(argv: Optional[list] = None) -> int:
    from pinetime_emu._names import ClaimError, claim
    try:
        claim()
    except ClaimError as e:
        print(e, file=sys.stderr)
        return 2
    from frontends.cli import main as cli_main
    return cli_main(argv)
