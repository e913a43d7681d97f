"""relation_kl: Python face of the ``torch.ops.linear_ard.relation_kl`` operator."""

from typing import Optional, Tuple

import torch


def relation_kl(
    x_s: torch.Tensor,
    y_s: Optional[torch.Tensor],
    x_t: torch.Tensor,
    y_t: Optional[torch.Tensor],
    key_mask: Optional[torch.Tensor] = None,
    causal: bool = False,
    scale_s: Optional[float] = None,
    scale_t: Optional[float] = None,
    deterministic: bool = False,
) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-row KL(R_t || R_s) between teacher and student relation distributions.

    For model m in {s (student), t (teacher)}, batch b and head h::

        Z_m = scale_m * X_m @ Y_m^T + M,   R_m = softmax(Z_m, dim=-1)
        kl[b, h, i] = sum_j R_t(i, j) * (log R_t(i, j) - log R_s(i, j))

    where M is -inf for padded keys (``key_mask`` False) and, when ``causal``, for keys j > i. A
    row with no visible key has kl 0 and no gradient. A row whose logits over the keys it sees are
    not all finite (NaN or Inf inputs, a dot product overflowing fp32) has kl and both LSEs NaN and
    NaN gradients, never a finite value; the other rows are unaffected. No n x n tensor is ever
    allocated.

    Args:
        x_s: student X, [B, H, n, d_s]; float32, bfloat16, float16 or float64; any strides with a
            contiguous last dim (a transposed view of [B, n, H, d] is read in place; a strided
            last dim is copied).
        y_s: student Y, [B, H_y, n, d_s] with H_y dividing H (head h reads Y head
            h // (H // H_y)), or None for the self-relation (Y is X).
        x_t, y_t: the teacher's, likewise (d_t may differ from d_s). Must not require grad.
        key_mask: [B, n] bool, True = visible key; None = every key visible.
        causal: also hide keys after the query.
        scale_s, scale_t: logit scales, default 1/sqrt(d) of each model; finite and > 0.
        deterministic: the backward gives the same gradient bits on every run of the same inputs on
            the same device (on CUDA it then computes dY and dX in two passes without atomics, at
            extra cost; the forward, the fp32 path and the CPU are deterministic either way).

    Returns:
        (kl, lse_s, lse_t), each [B, H, n] float32 (float64 for float64 inputs): the per-row KL and each model's row
        log-sum-exp of Z (-inf for a row with no visible key). kl is differentiable in x_s and
        y_s (gradients in their dtype); the LSEs carry no gradient.

    Raises:
        RuntimeError naming the offending argument on bad shapes, dtypes, devices or scales.
    """
    return torch.ops.linear_ard.relation_kl(
        x_s, y_s, x_t, y_t, key_mask, causal, scale_s, scale_t, deterministic
    )
