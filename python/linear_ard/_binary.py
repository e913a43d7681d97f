"""Finds the `linear-ard` binary the Python API and the lm-eval model run."""

import os
import shutil
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_NAME = "linear-ard"


def _candidates():
    """In order: $LINEAR_ARD_BINARY, $LINEAR_ARD_BUILD_DIR's, this package's bin/ (pip install .),
    the prefix's bin/ (cmake --install: <prefix>/lib/pythonX.Y/site-packages/linear_ard), the source
    tree's build/, then PATH."""
    if os.environ.get("LINEAR_ARD_BINARY"):
        yield Path(os.environ["LINEAR_ARD_BINARY"])
    if os.environ.get("LINEAR_ARD_BUILD_DIR"):
        yield Path(os.environ["LINEAR_ARD_BUILD_DIR"]) / "src" / "cli" / _NAME
    yield _PACKAGE / "bin" / _NAME
    if _PACKAGE.parent.name == "site-packages":
        yield _PACKAGE.parents[3] / "bin" / _NAME
    yield _PACKAGE.parents[1] / "build" / "src" / "cli" / _NAME
    on_path = shutil.which(_NAME)
    if on_path:
        yield Path(on_path)


def binary():
    """The binary's path; raises FileNotFoundError naming every place that was searched."""
    searched = []
    for path in _candidates():
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        searched.append(str(path))
    raise FileNotFoundError(f"{_NAME} not found; searched: {', '.join(searched)}. Install it (pip install .) or "
                            "set LINEAR_ARD_BINARY to it.")
