#!/usr/bin/env python3
"""Times the paper authors' relation-KL kernels at the shapes of benchmarks/authors/README.md.

Their code is imported from a checkout of their public repository given by --repo
(`kernels.attention_KL.integration.attn_kl_align`: their LSE, KL and backward Triton kernels behind
one autograd function); nothing of it is copied here. One causal self-relation (X = Y for student
and teacher), B = 1, forward + backward, the median of --iters runs after --warmup, CUDA events on
a GPU. --with-ours times this project's operator (python/linear_ard) on the same inputs in the same
process, after checking that both compute the same loss.

    benchmarks/authors/bench_authors.py --repo PATH [--sizes 1024,2048,...] [--heads 32] [--dim 128]
        [--dtype bf16|fp16|fp32] [--iters 5] [--warmup 2] [--with-ours] [--device cuda]

Prints a markdown table: n, their ms, useful TFLOP/s (12 d FLOPs per visible logit), and with
--with-ours our ms and their time / ours. Exit 1 with one line naming the problem when the checkout,
the device or an agreement check fails; 2 on bad arguments.
"""

import argparse
import importlib
import math
import statistics
import sys
import time
from pathlib import Path

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# Loss agreement between their kernels and ours, relative: both accumulate in fp32 over inputs of
# the given dtype; the two sums differ by rounding of the per-row terms, far below 1e-2.
AGREE_RTOL = 1e-2
ENTRY = "kernels/attention_KL/integration.py"


class BenchError(Exception):
    """A problem the user can fix: printed as one line, exit 1."""


def sizes_arg(text):
    try:
        sizes = [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes: not a comma-separated list of integers: {text!r}")
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"--sizes: lengths must be >= 1: {text!r}")
    return sizes


def positive_arg(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", required=True, help="a checkout of the authors' public repository")
    p.add_argument("--sizes", type=sizes_arg, default=[1024, 2048, 4096, 8192, 16384, 32768])
    p.add_argument("--heads", type=positive_arg, default=32)
    p.add_argument("--dim", type=positive_arg, default=128)
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--iters", type=positive_arg, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--device", default="cuda")
    p.add_argument("--with-ours", action="store_true", help="time this project's operator beside theirs")
    return p.parse_args(argv)


def load_authors(repo):
    """Their attn_kl_align, imported from the checkout at `repo` (a namespace package there)."""
    root = Path(repo)
    if not (root / ENTRY).is_file():
        raise BenchError(f"{root / ENTRY}: not found (--repo must be a checkout of the authors' repository)")
    sys.path.insert(0, str(root.resolve()))
    try:
        module = importlib.import_module("kernels.attention_KL.integration")
    except Exception as e:  # their import chain (Triton, torch versions) fails in many ways
        raise BenchError(f"{root / ENTRY}: import failed: {type(e).__name__}: {e}")
    if not hasattr(module, "attn_kl_align"):
        raise BenchError(f"{root / ENTRY}: defines no attn_kl_align")
    return module.attn_kl_align


def load_ours():
    """This project's relation_kl (python/linear_ard; the op library as _library finds it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    try:
        import linear_ard
    except ImportError as e:
        raise BenchError(f"--with-ours: linear_ard could not be loaded: {e}")
    return linear_ard.relation_kl


def theirs_step(attn_kl_align, x_s, x_t, scale):
    """Their loss (a scalar: the sum of the rows' KL) and its backward."""
    x_s.grad = None
    loss = attn_kl_align(x_s, x_s, x_t, x_t, attn_mask=None, causal=True, sm_scale_s=scale, sm_scale_t=scale)
    loss.backward()
    return loss.detach()


def ours_step(relation_kl, x_s, x_t, scale):
    """Our per-row KL summed (the same scalar) and its backward."""
    x_s.grad = None
    kl, _, _ = relation_kl(x_s, None, x_t, None, causal=True, scale_s=scale, scale_t=scale)
    loss = kl.sum()
    loss.backward()
    return loss.detach()


def median_ms(step, device, warmup, iters):
    """Median wall time of step() in ms: CUDA events on a GPU, the host clock elsewhere."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(iters):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            torch.cuda.synchronize(device)
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            step()
            times.append(1e3 * (time.perf_counter() - t0))
    return statistics.median(times)


def useful_tflops(n, heads, dim, ms):
    """12 d FLOPs per visible logit of a causal relation (2 GEMMs forward, 4 backward)."""
    return 12 * dim * heads * n * (n + 1) / 2 / (ms * 1e-3) / 1e12


def check_agree(theirs, ours, n):
    a, b = float(theirs), float(ours)
    if not math.isfinite(a) or not math.isfinite(b) or abs(a - b) > AGREE_RTOL * max(abs(a), abs(b), 1e-12):
        raise BenchError(f"n = {n}: the losses differ (theirs {a:.6g}, ours {b:.6g}): not the same computation")


def row(args, n, attn_kl_align, relation_kl, device):
    """One table row: their time and, with --with-ours, ours on the same inputs."""
    gen = torch.Generator(device="cpu").manual_seed(n)
    shape = (1, args.heads, n, args.dim)
    dtype = DTYPES[args.dtype]
    x_s = torch.randn(shape, generator=gen).to(device=device, dtype=dtype).requires_grad_()
    x_t = (x_s.detach().float() + 0.5 * torch.randn(shape, generator=gen).to(device)).to(dtype)
    scale = 1.0 / math.sqrt(args.dim)
    theirs_ms = median_ms(lambda: theirs_step(attn_kl_align, x_s, x_t, scale), device, args.warmup, args.iters)
    cells = [str(n), f"{theirs_ms:.3f}", f"{useful_tflops(n, args.heads, args.dim, theirs_ms):.2f}"]
    if relation_kl is not None:
        check_agree(theirs_step(attn_kl_align, x_s, x_t, scale), ours_step(relation_kl, x_s, x_t, scale), n)
        ours_ms = median_ms(lambda: ours_step(relation_kl, x_s, x_t, scale), device, args.warmup, args.iters)
        cells += [f"{ours_ms:.3f}", f"{theirs_ms / ours_ms:.1f}x"]
    return cells


def main(argv=None):
    args = parse_args(argv)
    try:
        device = torch.device(args.device)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise BenchError("--device cuda: no CUDA GPU is visible (their kernels are Triton; --device cpu only for a stand-in)")
        attn_kl_align = load_authors(args.repo)
        relation_kl = load_ours() if args.with_ours else None
        header = ["n", "authors' ms", "useful TFLOP/s"] + (["ours ms", "authors' / ours"] if relation_kl else [])
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
        print(f"{name}; torch {torch.__version__}; B=1 H={args.heads} d={args.dim} causal {args.dtype} self-relation, "
              f"forward+backward, median of {args.iters}\n")
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for n in args.sizes:
            print("| " + " | ".join(row(args, n, attn_kl_align, relation_kl, device)) + " |", flush=True)
    except BenchError as e:
        print(f"bench_authors: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
