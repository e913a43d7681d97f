"""Running one of scripts/*.py as a user does, for the tests of those scripts."""
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def script_run(name, *args):
    """scripts/NAME run with this Python and ARGS (str()-ed); the CompletedProcess, output captured."""
    return subprocess.run([sys.executable, str(SCRIPTS / name), *map(str, args)], capture_output=True, text=True)
