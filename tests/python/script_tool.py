"""Running one of the repository's Python scripts as a user does, for the tests of those scripts."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def script_run(path, *args):
    """The script at PATH (relative to the repository root, e.g. "experiments/seed_table.py") run with
    this Python and ARGS (str()-ed); the CompletedProcess, output captured."""
    return subprocess.run([sys.executable, str(ROOT / path), *map(str, args)], capture_output=True, text=True)
