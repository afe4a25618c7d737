"""python -m minidataloader.exercises.milestones N [PACKAGE] [--start-method spawn]"""

import sys

from . import main

sys.exit(main())
