"""Benchmark (not a test) of the deterministic relation-KL backward against the default one, at the
shapes the restore step runs, with its bitwise check.

For each shape (the LLaMA-2-7B head, SmolLM2-135M's Q/Q and K/K or V/V relations at stage 1's
2048 x 8 and 4096 x 8), causal bf16 self-relations: the backward alone and forward + backward, each
with deterministic=False (dX added through fp32 atomics from every key tile) and True (dY-only
column pass, then a row-parallel dX pass with plain stores), CUDA events, median after warm-up; then
the deterministic backward run twice on the same inputs must give bitwise-equal gradients (exit 1
otherwise), with the default backward's run-to-run difference beside it. A table last.

    LINEAR_ARD_LIBRARY=build/src/ops/liblinear_ard_ops.so python3 benchmarks/bench_relation_kl_deterministic.py \
        [--json FILE]
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_relation_kl_gpu import time_ms  # noqa: E402

# (label, batch, heads, head dim, n): the 7B head at the restore step's 4K (and 8K), SmolLM2-135M's
# 9 query heads and 3 key/value heads of d = 64 at stage 1's batches.
SHAPES = [
    ("LLaMA-2-7B Q/Q, B=1 H=32 d=128 n=4096", 1, 32, 128, 4096),
    ("LLaMA-2-7B Q/Q, B=1 H=32 d=128 n=8192", 1, 32, 128, 8192),
    ("SmolLM2-135M Q/Q, B=8 H=9 d=64 n=2048", 8, 9, 64, 2048),
    ("SmolLM2-135M K/K, B=8 H=3 d=64 n=2048", 8, 3, 64, 2048),
    ("SmolLM2-135M Q/Q, B=8 H=9 d=64 n=4096", 8, 9, 64, 4096),
]


def shape_inputs(b, h, d, n, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    xt = torch.randn(b, h, n, d, generator=g, device="cuda", dtype=torch.bfloat16)
    xs = (xt.float() + 0.3 * torch.randn(xt.shape, generator=g, device="cuda")).bfloat16()
    return xs, xt


def measure(label, b, h, d, n, seed):
    xs, xt = shape_inputs(b, h, d, n, seed)
    s = 1 / math.sqrt(d)
    fwd_op, bwd_op = torch.ops.linear_ard.relation_kl, torch.ops.linear_ard.relation_kl_backward
    kl, lse_s, lse_t = fwd_op(xs, None, xt, None, None, True, s, s, False)
    grad = torch.rand(kl.shape, generator=torch.Generator(device="cuda").manual_seed(seed + 1), device="cuda")
    reps = 10 if n * b <= 16384 else 5

    def bwd(det):
        return bwd_op(grad, xs, None, xt, None, lse_s, lse_t, None, True, s, s, det)

    def fwd_bwd(det):
        out = fwd_op(xs, None, xt, None, None, True, s, s, det)
        return bwd_op(grad, xs, None, xt, None, out[1], out[2], None, True, s, s, det)

    row = dict(shape=label, b=b, h=h, d=d, n=n)
    for det in (False, True):
        key = "det" if det else "default"
        row[f"{key}_bwd_ms"] = time_ms(lambda: bwd(det), reps)
        row[f"{key}_fwd_bwd_ms"] = time_ms(lambda: fwd_bwd(det), reps)
    first, second = bwd(True)[0], bwd(True)[0]
    torch.cuda.synchronize()
    row["det_bitwise"] = bool(torch.equal(first, second))
    a, c = bwd(False)[0], bwd(False)[0]
    row["default_max_diff"] = (a - c).abs().max().item()
    row["det_vs_default_max_rel"] = ((first - a).abs().max() / a.abs().max().clamp_min(1e-30)).item()
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the rows to this JSON file")
    args = ap.parse_args()
    torch.ops.load_library(os.environ["LINEAR_ARD_LIBRARY"])
    print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}; causal bf16 self-relations")
    rows = [measure(*shape, seed=i) for i, shape in enumerate(SHAPES)]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    print("\n| shape | default bwd ms | deterministic bwd ms | ratio | default fwd+bwd ms | deterministic "
          "fwd+bwd ms | ratio | deterministic bitwise (2 runs) | default run-to-run max |diff| |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for r in rows:
        print(f"| {r['shape']} | {r['default_bwd_ms']:.3f} | {r['det_bwd_ms']:.3f} | "
              f"{r['det_bwd_ms'] / r['default_bwd_ms']:.2f}x | {r['default_fwd_bwd_ms']:.3f} | "
              f"{r['det_fwd_bwd_ms']:.3f} | {r['det_fwd_bwd_ms'] / r['default_fwd_bwd_ms']:.2f}x | "
              f"{'equal' if r['det_bitwise'] else 'DIFFER'} | {r['default_max_diff']:.2e} |")
    sys.exit(0 if all(r["det_bitwise"] for r in rows) else 1)


if __name__ == "__main__":
    main()
