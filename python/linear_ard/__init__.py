"""linear_ard: the exact linear-memory relation-KL operator of LinearARD for PyTorch.

Importing the package loads the compiled op library (see ``_library.load`` for where it is looked
for) and exposes:

* :func:`relation_kl` -- per-row KL between teacher and student relation distributions;
* :func:`relation_loss` -- the paper's overall Q/Q, K/K, V/V relation-distillation loss.
"""

from . import _library

_library.load()

from .relation_kl import relation_kl  # noqa: E402
from .relation_loss import relation_loss  # noqa: E402

__all__ = ["relation_kl", "relation_loss"]
