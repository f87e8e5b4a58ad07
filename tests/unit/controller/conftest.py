"""Makes ``controller_story`` (the helpers these tests share) importable.

pytest runs with ``--import-mode=importlib``, which does not put test folders on
``sys.path``; the helpers are plain functions, not fixtures, so stories read
top to bottom.
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
