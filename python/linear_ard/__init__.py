"""linear_ard: LinearARD in Python.

* :func:`restore`, :func:`tune`, :func:`diagnose`, :func:`evaluate` -- the `linear-ard` command's runs, returning
  their results as Python objects (``api.py``; docs/python.md);
* :func:`relation_kl` -- per-row KL between teacher and student relation distributions, and
  :func:`relation_loss` -- the paper's Q/Q, K/K, V/V relation-distillation loss: the exact
  linear-memory operator for PyTorch, loaded from the compiled op library on first use (see
  ``_library.load`` for where it is looked for);
* the lm-evaluation-harness model ``linear-ard`` (``lm_eval_model.py``, ``lm_eval_cli.py``).
"""

from .api import RestoreResult, RunError, diagnose, evaluate, restore, tune

_OPERATORS = ("relation_kl", "relation_loss")


def __getattr__(name):
    # The op library is loaded only when an operator is asked for: the API above runs the binary
    # and needs no compiled Python extension.
    if name not in _OPERATORS:
        raise AttributeError(f"module 'linear_ard' has no attribute '{name}'")
    from . import _library
    _library.load()
    from .relation_kl import relation_kl as kl
    from .relation_loss import relation_loss as loss
    # Importing the submodules bound their names to the modules: bind the functions instead.
    globals().update(relation_kl=kl, relation_loss=loss)
    return globals()[name]


__all__ = ["restore", "tune", "diagnose", "evaluate", "RestoreResult", "RunError", *_OPERATORS]
