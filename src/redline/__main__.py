import sys

from redline.cli import console

sys.exit(console())
