"""`python3 -m lumen.studio`: see lumen/studio/server.py or `python3 -m lumen.studio --help`."""

import sys

from .server import main

sys.exit(main())
