"""Makes the in-tree package importable (`import linear_ard` finds <repo>/python/linear_ard), and
keeps the binary from drawing plots and starting its TensorBoard writer beside each of the suites'
many runs (LINEAR_ARD_NO_PLOT=1, LINEAR_ARD_NO_TENSORBOARD=1): tests/python/test_plot.py and
test_tensorboard.py check them themselves. Under pytest-xdist (scripts/test.sh runs one worker per
core) OpenMP threads wait for work asleep instead of spinning (OMP_WAIT_POLICY=PASSIVE, for the
binary and for torch here): with every core running a worker, a spinning thread takes its core from
the other worker's threads."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
os.environ.setdefault("LINEAR_ARD_NO_PLOT", "1")
os.environ.setdefault("LINEAR_ARD_NO_TENSORBOARD", "1")
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
