"""The `linear-ard` entry point `pip install .` writes: runs the binary installed inside this
package (bin/linear-ard), telling it which Python to run its scripts and the lm-eval bridge with."""

import os
import sys
from pathlib import Path


def main():
    binary = Path(__file__).resolve().parent / "bin" / "linear-ard"
    if not binary.is_file():
        sys.exit(f"linear-ard: error: {binary} is missing (reinstall: pip install .)")
    os.environ.setdefault("LINEAR_ARD_PYTHON", sys.executable)
    os.execv(str(binary), [str(binary), *sys.argv[1:]])


if __name__ == "__main__":
    main()
