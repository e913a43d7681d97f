"""linear_ard.relation_kl: gradcheck, agreement with autograd on materialised matrices, bad inputs."""

import math

import pytest
import torch

import linear_ard
from relation_kl_dense import max_abs_diff, relation_kl_dense


def _key_mask(batch, n):
    """Random padding; item 0 fully padded and item 1 with leading padding (rows with no key)."""
    mask = torch.rand(batch, n) > 0.3
    if batch > 1:
        mask[0] = False
        mask[1, : min(3, n)] = False
    return mask


# (name, B, H, H_y_s, H_y_t, n, d_s, d_t, cross, causal, masked)
GRADCHECK_CASES = [
    ("self", 1, 2, 2, 2, 5, 3, 3, False, False, False),
    ("self_causal_masked", 2, 2, 2, 2, 6, 4, 4, False, True, True),
    ("cross_gqa_causal_masked", 2, 4, 2, 1, 5, 3, 5, True, True, True),
    ("cross_gqa_masked", 2, 2, 1, 2, 4, 4, 2, True, False, True),
]


@pytest.mark.parametrize("case", GRADCHECK_CASES, ids=[c[0] for c in GRADCHECK_CASES])
def test_gradcheck(case):
    _, batch, heads, hy_s, hy_t, n, d_s, d_t, cross, causal, masked = case
    x_s = torch.randn(batch, heads, n, d_s, dtype=torch.float64, requires_grad=True)
    x_t = torch.randn(batch, heads, n, d_t, dtype=torch.float64)
    y_s = torch.randn(batch, hy_s, n, d_s, dtype=torch.float64, requires_grad=True) if cross else None
    y_t = torch.randn(batch, hy_t, n, d_t, dtype=torch.float64) if cross else None
    mask = _key_mask(batch, n) if masked else None
    inputs = (x_s, y_s) if cross else (x_s,)

    def kl(*student):
        return linear_ard.relation_kl(student[0], student[1] if cross else None, x_t, y_t, mask,
                                      causal)[0]

    # fp64 inputs run in fp64 end to end (outputs and gradients too), so gradcheck's defaults hold:
    # central differences with eps = 1e-6 are accurate to ~1e-10 here, far inside atol = 1e-5.
    assert torch.autograd.gradcheck(kl, inputs)


# (name, B, H, H_y_s, H_y_t, n, d_s, d_t, cross, causal, masked, dtype, sequence_major)
DENSE_CASES = [
    ("n1_self_f32", 1, 1, 1, 1, 1, 8, 8, False, False, False, torch.float32, False),
    ("n2_cross_gqa_causal_f32", 2, 4, 2, 1, 2, 16, 16, True, True, False, torch.float32, False),
    ("n97_self_causal_masked_f32", 3, 2, 2, 2, 97, 32, 32, False, True, True, torch.float32, False),
    ("n97_cross_gqa_masked_f64", 2, 4, 1, 2, 97, 16, 24, True, False, True, torch.float64, False),
    ("n61_self_causal_seqmajor_bf16", 2, 4, 4, 4, 61, 64, 64, False, True, False, torch.bfloat16,
     True),
    ("n97_cross_gqa_causal_masked_seqmajor_f16", 2, 4, 2, 4, 97, 32, 16, True, True, True,
     torch.float16, True),
    ("n300_cross_gqa_causal_masked_seqmajor_bf16_d128", 1, 4, 1, 2, 300, 128, 128, True, True,
     True, torch.bfloat16, True),
]


# The CUDA kernels are checked by the same cases where a GPU is present (they refuse float64).
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _operand(batch, heads, n, d, dtype, sequence_major, requires_grad, device):
    """A leaf in its storage layout and the [B, H, n, d] view the op receives."""
    shape = (batch, n, heads, d) if sequence_major else (batch, heads, n, d)
    leaf = torch.randn(*shape).to(device=device, dtype=dtype).requires_grad_(requires_grad)
    return leaf, (leaf.transpose(1, 2) if sequence_major else leaf)


def _tolerance(baseline_error, reference, dtype):
    """docs/architecture.md's rule (from FlashAttention): no worse than twice a dense PyTorch
    implementation in the inputs' dtype. The floor covers a baseline that happens to be exact (for
    fp64 inputs it is the oracle itself): fp32 accumulation over n <= 97 keys of O(10) logits stays
    within ~1e-5 of the largest value; fp64 accumulation (fp64 inputs) within ~1e-13, so 1e-10."""
    floor = 1e-10 if dtype == torch.float64 else 1e-5
    return 2.0 * baseline_error + floor * max(1.0, reference.abs().max().item())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", DENSE_CASES, ids=[c[0] for c in DENSE_CASES])
def test_matches_dense_autograd(case, device):
    _, batch, heads, hy_s, hy_t, n, d_s, d_t, cross, causal, masked, dtype, seq_major = case
    if device == "cuda" and dtype == torch.float64:
        pytest.skip("the CUDA kernels are float32/bfloat16/float16 only")
    _, x_s = _operand(batch, heads, n, d_s, dtype, seq_major, True, device)
    _, x_t = _operand(batch, heads, n, d_t, dtype, seq_major, False, device)
    _, y_s = _operand(batch, hy_s, n, d_s, dtype, seq_major, True, device) if cross else (None, None)
    _, y_t = _operand(batch, hy_t, n, d_t, dtype, seq_major, False, device) if cross else (None, None)
    mask = _key_mask(batch, n).to(device) if masked else None
    grad_kl = torch.randn(batch, heads, n, device=device)

    kl, lse_s, lse_t = linear_ard.relation_kl(x_s, y_s, x_t, y_t, mask, causal)
    assert kl.dtype == (torch.float64 if dtype == torch.float64 else torch.float32)
    assert kl.shape == (batch, heads, n)
    assert not lse_s.requires_grad
    got_grads = torch.autograd.grad(kl, [t for t in (x_s, y_s) if t is not None], grad_kl)
    assert all(g.dtype == dtype for g in got_grads)

    def dense(compute_dtype):
        student = [t.detach().to(compute_dtype).requires_grad_() for t in (x_s, y_s) if t is not None]
        outputs = relation_kl_dense(student[0], student[1] if cross else None, x_t, y_t, mask,
                                    causal, dtype=compute_dtype)
        grads = torch.autograd.grad(outputs[0], student, grad_kl.cpu().to(compute_dtype))
        return outputs, grads

    (oracle, oracle_grads), (baseline, baseline_grads) = dense(torch.float64), dense(dtype)
    for name, got, want, base in zip(("kl", "lse_s", "lse_t"), (kl, lse_s, lse_t), oracle, baseline):
        assert max_abs_diff(got, want) <= _tolerance(max_abs_diff(base, want), want, dtype), name
    for got, want, base in zip(got_grads, oracle_grads, baseline_grads):
        assert max_abs_diff(got, want) <= _tolerance(max_abs_diff(base, want), want, dtype)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_runs_on_the_current_stream():
    x_s = torch.randn(2, 4, 257, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    x_t = torch.randn(2, 4, 257, 64, device="cuda", dtype=torch.bfloat16)
    want = linear_ard.relation_kl(x_s, None, x_t, None, causal=True)[0]
    (want_grad,) = torch.autograd.grad(want.sum(), x_s)
    # A leaf of its own, so that its autograd graph belongs to the side stream only.
    x_s_side = x_s.detach().clone().requires_grad_()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        got = linear_ard.relation_kl(x_s_side, None, x_t, None, causal=True)[0]
        (got_grad,) = torch.autograd.grad(got.sum(), x_s_side)
    torch.cuda.current_stream().wait_stream(stream)
    # Same kernels on the same inputs: only the order of atomic additions, if any, may differ.
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(got_grad, want_grad, atol=1e-2, rtol=1e-2)


def test_strided_last_dim_is_copied():
    x_s = torch.randn(2, 2, 8, 9, requires_grad=True)  # viewed as [B, H, n=9, d=8]
    x_t = torch.randn(2, 2, 9, 8)
    view = x_s.transpose(2, 3)
    kl = linear_ard.relation_kl(view, None, x_t, None)[0]
    want = linear_ard.relation_kl(view.contiguous(), None, x_t, None)[0]
    assert torch.equal(kl, want)
    kl.sum().backward()
    assert x_s.grad.shape == x_s.shape


def test_meta_shapes():
    x_s = torch.empty(2, 8, 300, 64, device="meta", dtype=torch.bfloat16)
    y_s = torch.empty(2, 2, 300, 64, device="meta", dtype=torch.bfloat16)
    x_t = torch.empty(2, 8, 300, 32, device="meta", dtype=torch.bfloat16)
    kl, lse_s, lse_t = linear_ard.relation_kl(x_s, y_s, x_t, None)
    assert kl.device.type == "meta" and kl.shape == (2, 8, 300) and kl.dtype == torch.float32


def _bad_call(**overrides):
    args = dict(x_s=torch.randn(2, 4, 7, 8), y_s=None, x_t=torch.randn(2, 4, 7, 8), y_t=None,
                key_mask=None, causal=False, scale_s=None, scale_t=None)
    args.update(overrides)
    return lambda: linear_ard.relation_kl(**args)


BAD_INPUTS = [
    ("x_s", dict(x_s=torch.randn(2, 7, 8))),
    ("y_s", dict(y_s=torch.randn(2, 3, 7, 8))),
    ("y_t", dict(y_t=torch.randn(2, 4, 6, 8))),
    ("x_t", dict(x_t=torch.randn(3, 4, 7, 8))),
    ("x_t", dict(x_t=torch.randn(2, 2, 7, 8))),
    ("x_t", dict(x_t=torch.randn(2, 4, 7, 8, dtype=torch.float64))),
    ("x_t", dict(x_t=torch.randn(2, 4, 7, 8, requires_grad=True))),
    ("x_t", dict(x_t=torch.empty(2, 4, 7, 8, device="meta"))),
    ("x_s", dict(x_s=torch.randn(2, 4, 0, 8), x_t=torch.randn(2, 4, 0, 8))),
    ("x_s", dict(x_s=torch.ones(2, 4, 7, 8, dtype=torch.int32),
                 x_t=torch.ones(2, 4, 7, 8, dtype=torch.int32))),
    ("scale_s", dict(scale_s=0.0)),
    ("scale_t", dict(scale_t=math.inf)),
    ("key_mask", dict(key_mask=torch.ones(2, 6, dtype=torch.bool))),
    ("key_mask", dict(key_mask=torch.ones(2, 7))),
]


@pytest.mark.parametrize("argument,overrides", BAD_INPUTS,
                         ids=[f"{a}-{i}" for i, (a, _) in enumerate(BAD_INPUTS)])
def test_bad_inputs_name_the_argument(argument, overrides):
    with pytest.raises(RuntimeError, match=argument):
        _bad_call(**overrides)()


# Peaked self-relations (unit-scale inputs, d = 64..256: the diagonal logit |x|^2/sqrt(d) ~ sqrt(d)
# dominates each row), student = teacher + noise, fp32. docs/architecture.md's rule with the fp64
# oracle and the same computation in dense fp32 PyTorch as the baseline; the floor is one fp32 unit
# of the largest KL, so the rule itself decides.
PEAKED_CASES = [(d, n) for d in (64, 128, 256) for n in (97, 1025)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("d,n", PEAKED_CASES, ids=[f"d{d}_n{n}" for d, n in PEAKED_CASES])
def test_peaked_fp32_kl_within_twice_dense_fp32(d, n, device):
    gen = torch.Generator().manual_seed(d * 7919 + n)
    for noise in (0.05, 1.0):
        for causal in (False, True):
            x_t = torch.randn(1, 2, n, d, generator=gen)
            x_s = x_t + noise * torch.randn(x_t.shape, generator=gen)
            kl = linear_ard.relation_kl(x_s.to(device), None, x_t.to(device), None, None, causal)[0]
            oracle = relation_kl_dense(x_s, None, x_t, None, None, causal)[0]
            baseline = relation_kl_dense(x_s, None, x_t, None, None, causal, dtype=torch.float32)[0]
            floor = 2.0**-24 * max(1.0, oracle.abs().max().item())
            err, base_err = max_abs_diff(kl, oracle), max_abs_diff(baseline, oracle)
            assert err <= 2.0 * base_err + floor, (noise, causal, err, base_err)


# The non-finite rule (docs/operator-cpu.md): a row whose visible logits are not all finite has NaN
# kl and LSEs and NaN gradients, never a finite value; here every row, in every dtype.
NONFINITE_DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _huge(dtype):
    """An input value whose logits overflow fp32 (fp16 cannot hold one: Inf)."""
    return math.inf if dtype == torch.float16 else 3e38


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", NONFINITE_DTYPES, ids=lambda t: str(t)[6:])
@pytest.mark.parametrize("poison", ["nan_column", "all_nan", "huge"])
def test_nonfinite_teacher_gives_nan(poison, dtype, device):
    x_s = torch.randn(2, 2, 37, 64).to(device=device, dtype=dtype).requires_grad_()
    x_t = torch.randn(2, 2, 37, 64)
    if poison == "nan_column":
        x_t[..., 3] = math.nan
    elif poison == "all_nan":
        x_t[:] = math.nan
    else:
        x_t[:] = _huge(dtype)  # every logit overflows to +inf ("a k projection of 3e38")
    x_t = x_t.to(device=device, dtype=dtype)
    for causal in (False, True):
        kl, lse_s, lse_t = linear_ard.relation_kl(x_s, None, x_t, None, None, causal)
        assert kl.isnan().all() and lse_s.isnan().all() and lse_t.isnan().all()
        (grad,) = torch.autograd.grad(kl.sum(), x_s)
        assert grad.isnan().all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", NONFINITE_DTYPES, ids=lambda t: str(t)[6:])
def test_nan_row_leaves_the_rows_that_do_not_see_it(dtype, device):
    """Causal, teacher row 20 NaN: rows >= 20 see key 20 (NaN), rows < 20 are exact as before."""
    x_s = torch.randn(1, 2, 41, 64).to(device=device, dtype=dtype)
    x_t = torch.randn(1, 2, 41, 64).to(device=device, dtype=dtype)
    clean = linear_ard.relation_kl(x_s, None, x_t, None, None, True)[0]
    x_t[:, :, 20] = math.nan
    kl = linear_ard.relation_kl(x_s, None, x_t, None, None, True)[0]
    assert kl[:, :, 20:].isnan().all()
    assert torch.equal(kl[:, :, :20], clean[:, :, :20])
