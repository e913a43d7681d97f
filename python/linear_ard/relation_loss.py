"""relation_loss: Python face of the ``torch.ops.linear_ard.relation_loss`` operator."""

from typing import Dict, Optional, Sequence, Tuple

import torch

_RELATIONS = ("q", "k", "v")


def relation_loss(
    student: Sequence[torch.Tensor],
    teacher: Sequence[torch.Tensor],
    key_mask: Optional[torch.Tensor] = None,
    causal: bool = False,
    lambda_q: float = 1.0,
    lambda_k: float = 1.0,
    lambda_v: float = 1.0,
    deterministic: bool = False,
) -> Tuple[torch.Tensor, Dict[str, torch.Tensor]]:
    """The paper's overall loss: sum over r in {Q, K, V} of lambda_r * L_KL(R_t^r, R_s^r).

    Each relation is the self-relation softmax(X X^T / sqrt(d) + M) of one projection, and its
    L_KL is the mean of the per-row KL (see :func:`relation_kl`) over valid rows, heads and batch.
    A row is valid when its query position is a real token (``key_mask`` True; every row without
    a mask); such a row always sees at least one key, itself. No valid row at all gives 0. A NaN or
    Inf in a valid row's relation (see :func:`relation_kl`) makes the loss NaN, never a finite value.

    Args:
        student: (q, k, v) of the student: q [B, H_q, n, d], k and v [B, H_kv, n, d], post-RoPE.
        teacher: (q, k, v) of the frozen teacher, same layout; must not require grad.
        key_mask: [B, n] bool, True = real token; None = no padding.
        causal: hide keys after the query (decoder relations).
        lambda_q, lambda_k, lambda_v: weights >= 0; a relation weighted 0 is not computed.
        deterministic: the backward gives the same bits on every run (see :func:`relation_kl`).

    Returns:
        (loss, per_relation): loss is a scalar (float32; float64 for float64 inputs), differentiable in the student tensors;
        per_relation maps "q"/"k"/"v" to the unweighted L_KL of each computed relation (for
        logging), leaving out relations weighted 0.
    """
    if len(student) != 3 or len(teacher) != 3:
        raise ValueError("relation_loss: student and teacher must each be (q, k, v)")
    lambdas = (lambda_q, lambda_k, lambda_v)
    loss, relation_losses = torch.ops.linear_ard.relation_loss(
        *student, *teacher, key_mask, causal, *lambdas, deterministic
    )
    per_relation = {
        name: relation_losses[r] for r, name in enumerate(_RELATIONS) if lambdas[r] != 0.0
    }
    return loss, per_relation
