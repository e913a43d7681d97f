"""Makes the in-tree package importable: `import linear_ard` finds <repo>/python/linear_ard."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
