"""Loads liblinear_ard_ops.so, which registers the ``torch.ops.linear_ard`` operators."""

import os
from pathlib import Path

import torch

_LIBRARY_NAME = "liblinear_ard_ops.so"
_PACKAGE = Path(__file__).resolve().parent


def _candidates():
    """Where the library may be, in order: an explicit file, the named build folder, this package's
    folder (``pip install .``), the prefix's lib folder (``cmake --install``:
    <prefix>/lib/pythonX.Y/site-packages/linear_ard), <repo>/build (the source tree)."""
    explicit = os.environ.get("LINEAR_ARD_LIBRARY")
    if explicit:
        yield Path(explicit)
    build_dir = os.environ.get("LINEAR_ARD_BUILD_DIR")
    if build_dir:
        yield Path(build_dir) / "src" / "ops" / _LIBRARY_NAME
    yield _PACKAGE / _LIBRARY_NAME
    if _PACKAGE.parent.name == "site-packages":
        yield _PACKAGE.parents[2] / _LIBRARY_NAME
    yield _PACKAGE.parents[1] / "build" / "src" / "ops" / _LIBRARY_NAME


def load():
    """Loads the op library once; raises ImportError naming every place that was searched."""
    if hasattr(torch.ops.linear_ard, "relation_kl"):
        return
    searched = []
    for path in _candidates():
        if path.is_file():
            torch.ops.load_library(str(path))
            return
        searched.append(str(path))
    raise ImportError(
        f"linear_ard: {_LIBRARY_NAME} not found; searched: {', '.join(searched)}. Install the package "
        "(pip install .), or build it (cmake --build <build> --target linear_ard_ops) and set "
        "LINEAR_ARD_LIBRARY to the file or LINEAR_ARD_BUILD_DIR to the build folder."
    )
