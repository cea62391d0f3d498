import sys

from redline.cli import main

sys.exit(main())
