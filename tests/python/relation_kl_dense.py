"""The one Python dense oracle of the relation KL: materialised n x n matrices, differentiable by autograd.

Every Python check and benchmark imports it (tests/python, tests/gpu, benchmarks): in fp64 it is the
reference, in the inputs' dtype the same-dtype baseline of FlashAttention's 2x rule.
"""

import math

import torch


def visible_keys(batch, n, key_mask, causal, device="cpu"):
    """[B, 1, n, n] bool: True where key j is visible from query i."""
    visible = torch.ones(batch, 1, n, n, dtype=torch.bool, device=device)
    if key_mask is not None:
        visible = visible & key_mask.to(device=device, dtype=torch.bool).view(batch, 1, 1, n)
    if causal:
        visible = visible & torch.ones(n, n, dtype=torch.bool, device=device).tril()
    return visible


def _log_relation(x, y, scale, visible, has_key):
    """Row log-probabilities of softmax(scale X Y^T + M) and row LSEs (-inf for rows with no key).

    Rows without a visible key get logits 0 so that nothing downstream sees NaN; callers zero them.
    The dot products are scaled after the GEMM, as the operator does.
    """
    y = y.repeat_interleave(x.shape[1] // y.shape[1], dim=1)
    z = (scale * (x @ y.transpose(-1, -2))).masked_fill(~visible, -math.inf)
    lse = torch.where(has_key.squeeze(-1), z.logsumexp(-1), -math.inf)
    z = torch.where(has_key, z, torch.zeros((), dtype=z.dtype, device=z.device))
    return torch.log_softmax(z, dim=-1), lse


def relation_kl_dense(x_s, y_s, x_t, y_t, key_mask=None, causal=False, scale_s=None,
                      scale_t=None, dtype=torch.float64, device="cpu"):
    """(kl, lse_s, lse_t) of the operator's contract, computed in `dtype` on `device`.

    Differentiable in x_s and y_s as given (cast inside), so gradients land on the caller's leaves.
    y_s / y_t None: the self-relation (Y is X).
    """
    batch, _, n, d_s = x_s.shape
    scale_s = 1.0 / math.sqrt(d_s) if scale_s is None else scale_s
    scale_t = 1.0 / math.sqrt(x_t.shape[-1]) if scale_t is None else scale_t
    # The operator holds its scales in fp32 (RelationSide::scale), fp64 inputs included.
    scale_s, scale_t = (torch.tensor(s, dtype=torch.float32).item() for s in (scale_s, scale_t))
    visible = visible_keys(batch, n, key_mask, causal, device)
    has_key = visible.any(-1, keepdim=True)
    xs = x_s.to(device=device, dtype=dtype)
    ys = xs if y_s is None else y_s.to(device=device, dtype=dtype)
    xt = x_t.detach().to(device=device, dtype=dtype)
    yt = xt if y_t is None else y_t.detach().to(device=device, dtype=dtype)
    log_rs, lse_s = _log_relation(xs, ys, scale_s, visible, has_key)
    log_rt, lse_t = _log_relation(xt, yt, scale_t, visible, has_key)
    zero = torch.zeros((), dtype=dtype, device=device)
    # Masked entries are -inf in both; zero them before the difference so no NaN reaches autograd.
    diff = torch.where(visible, log_rt, zero) - torch.where(visible, log_rs, zero)
    kl = torch.where(has_key.squeeze(-1), (log_rt.exp() * diff).sum(-1), zero)
    return kl, lse_s, lse_t


def max_abs_diff(a, b):
    """max |a - b| in fp64, equal infinities (empty rows' LSE) counting as equal."""
    a = a.detach().cpu().double()
    b = b.detach().cpu().double()
    same_inf = a.isinf() & b.isinf() & (a == b)
    return torch.where(same_inf, 0.0, (a - b).abs()).max().item()
