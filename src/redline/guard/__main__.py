"""`python -m redline.guard ARGS` = `redline guard ARGS`, without loading the other commands.

The pre-commit hook runs on every commit, so it skips importing the runner and providers.
"""

from __future__ import annotations

import argparse
import sys

from redline.cli import run_command
from redline.cli.guard import register


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="redline")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["guard", *(sys.argv[1:] if argv is None else argv)])
    return run_command(args.handler, args)


if __name__ == "__main__":
    sys.exit(main())
