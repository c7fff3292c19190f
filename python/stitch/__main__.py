"""`python -m stitch ARGS`: the stitch command line (docs/cli.md) that the package carries."""

import os
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    # In an installed wheel, stitch/bin/stitch; in a build tree, <build>/stitch beside python/.
    for cli in (here / "bin" / "stitch", here.parent.parent / "stitch"):
        if cli.is_file() and os.access(cli, os.X_OK):
            os.execv(cli, [str(cli)] + sys.argv[1:])
    print(f"stitch: the command line is not in this package ({here / 'bin' / 'stitch'} is missing); "
          "reinstall it with pip", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
