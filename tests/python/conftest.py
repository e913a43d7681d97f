"""Makes the in-tree package importable (`import linear_ard` finds <repo>/python/linear_ard), and
keeps the binary from drawing plots and starting its TensorBoard writer beside each of the suites'
many runs (LINEAR_ARD_NO_PLOT=1, LINEAR_ARD_NO_TENSORBOARD=1): tests/python/test_plot.py and
test_tensorboard.py check them themselves."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
os.environ.setdefault("LINEAR_ARD_NO_PLOT", "1")
os.environ.setdefault("LINEAR_ARD_NO_TENSORBOARD", "1")
