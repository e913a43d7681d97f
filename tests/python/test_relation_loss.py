"""linear_ard.relation_loss against the paper's overall loss evaluated densely."""

import math

import pytest
import torch

import linear_ard
from relation_kl_dense import relation_kl_dense


def _projections(batch, heads_q, heads_kv, n, d, requires_grad, device="cpu"):
    shapes = [(batch, heads_q, n, d), (batch, heads_kv, n, d), (batch, heads_kv, n, d)]
    return [torch.randn(*s, device=device, requires_grad=requires_grad) for s in shapes]


def _dense_loss(student, teacher, key_mask, causal, lambdas):
    """sum_r lambda_r * mean of per-row KL over real query rows, heads and batch, in fp64."""
    total, per_relation = 0.0, {}
    for name, s, t, lam in zip("qkv", student, teacher, lambdas):
        if lam == 0.0:
            continue
        kl = relation_kl_dense(s, None, t, None, key_mask, causal)[0]
        valid = (torch.ones(kl.shape[0], kl.shape[2], dtype=torch.bool) if key_mask is None
                 else key_mask.cpu())[:, None, :].expand_as(kl)
        per_relation[name] = kl[valid].sum() / max(1, valid.sum().item())
        total = total + lam * per_relation[name]
    return total, per_relation


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
@pytest.mark.parametrize("causal", [False, True])
def test_matches_dense_loss_and_gradients(causal, device):
    batch, n = 3, 29
    student = _projections(batch, 4, 2, n, 16, True, device)
    teacher = _projections(batch, 4, 2, n, 16, False, device)
    key_mask = (torch.rand(batch, n) > 0.25).to(device)
    key_mask[0, :5] = False  # leading padding: causal rows with no visible key
    lambdas = (1.0, 0.5, 2.0)

    loss, per_relation = linear_ard.relation_loss(student, teacher, key_mask, causal, *lambdas)
    grads = torch.autograd.grad(loss, student)
    dense_student = [s.detach().cpu().double().requires_grad_() for s in student]
    want, want_per_relation = _dense_loss(dense_student, teacher, key_mask, causal, lambdas)
    want_grads = torch.autograd.grad(want, dense_student)

    # fp32 inputs and fp32 accumulation over at most n = 29 keys: a few fp32 ulps of O(1) values.
    assert loss.dtype == torch.float32 and loss.dim() == 0
    assert loss.item() == pytest.approx(want.item(), abs=1e-5)
    assert set(per_relation) == {"q", "k", "v"}
    for name in "qkv":
        assert per_relation[name].item() == pytest.approx(want_per_relation[name].item(), abs=1e-5)
    for got, expected in zip(grads, want_grads):
        torch.testing.assert_close(got.cpu().double(), expected, atol=1e-5, rtol=1e-4)


def test_zero_weight_relation_is_not_computed():
    student = _projections(2, 4, 2, 9, 8, True)
    teacher = _projections(2, 4, 2, 9, 8, False)
    teacher[1] = torch.randn(2, 3, 9, 8)  # an invalid K: an error if the K/K relation ran
    loss, per_relation = linear_ard.relation_loss(student, teacher, lambda_k=0.0)
    assert set(per_relation) == {"q", "v"}
    loss.backward()
    assert student[1].grad is None
    assert loss.item() == pytest.approx((per_relation["q"] + per_relation["v"]).item(), abs=1e-6)


def test_all_padding_gives_zero():
    student = _projections(2, 2, 2, 7, 8, True)
    teacher = _projections(2, 2, 2, 7, 8, False)
    loss, _ = linear_ard.relation_loss(student, teacher, torch.zeros(2, 7, dtype=torch.bool))
    loss.backward()
    assert loss.item() == 0.0
    assert all(torch.all(s.grad == 0) for s in student)


def test_bad_inputs_name_the_argument():
    student = _projections(1, 4, 2, 5, 8, False)
    teacher = _projections(1, 4, 2, 5, 8, False)
    with pytest.raises(RuntimeError, match="lambda_v"):
        linear_ard.relation_loss(student, teacher, lambda_v=-1.0)
    with pytest.raises(RuntimeError, match="k_t"):
        linear_ard.relation_loss(student, [teacher[0], teacher[1].double(), teacher[2]])
    with pytest.raises(RuntimeError, match="q_t"):
        linear_ard.relation_loss(student, [teacher[0].requires_grad_(), teacher[1], teacher[2]])


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=lambda t: str(t)[6:])
def test_nonfinite_teacher_projection_gives_nan_loss(dtype, device):
    """A NaN teacher layer, or a k projection whose logits overflow, is a NaN loss (never 0)."""
    for poison in (math.nan, math.inf if dtype == torch.float16 else 3e38):
        student = [s.to(dtype).detach().requires_grad_() for s in _projections(2, 4, 2, 9, 16, False, device)]
        teacher = [t.to(dtype) for t in _projections(2, 4, 2, 9, 16, False, device)]
        teacher[1] = torch.full_like(teacher[1], poison)
        loss, per_relation = linear_ard.relation_loss(student, teacher, causal=True)
        assert loss.isnan() and per_relation["k"].isnan()
        assert per_relation["q"].isfinite() and per_relation["v"].isfinite()
        grads = torch.autograd.grad(loss, student)
        assert grads[1].isnan().all()
