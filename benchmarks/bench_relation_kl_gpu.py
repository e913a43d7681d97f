"""Benchmark (not a test) of the CUDA relation-KL against naive dense PyTorch and torch SDPA.

One causal bf16 self-relation, B=1, H=32, d=128 (the shape of benchmarks/authors/README.md), all in one process:
forward, backward and forward+backward time (CUDA events, median after warm-up), useful TFLOP/s
(12*d FLOPs per visible logit: 2 GEMMs forward, 4 backward), peak extra memory
(torch.cuda.max_memory_allocated over the inputs), and the ratios; beside them the deterministic
backward (deterministic=True: the same bits every run) and its cost over the default. Then the
memory-vs-n curve up to n = 256K and the three relations of a LLaMA-3-8B final layer (Q: 32 heads,
K/V: 8, d = 128), default and deterministic.

    LINEAR_ARD_LIBRARY=build/src/ops/liblinear_ard_ops.so python3 benchmarks/bench_relation_kl_gpu.py \
        [--out DIR] [--quick | --sizes 4096,8192,16384]

The kernels are the library's (wgmma forward, its key tiles by TMA, and backward on sm_90a for D <= 128, mma.sync elsewhere); the
other versions, and timings of each, are in dev/cuda. The C++ operator harness times the same shape
without torch: tests/core/relation_kl_ops --backend cuda --mode perf.
"""

import argparse
import json
import math
import os
import statistics

import torch
import torch.nn.functional as F

H, D = 32, 128
GIB = 1024**3


def time_ms(fn, reps, warmup=2):
    """Median milliseconds of fn() over reps runs (CUDA events), after warmup runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def peak_extra_gib(fn):
    """Peak memory fn allocates beyond what is allocated before it."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / GIB


def useful_tflops(n, heads, ms, flops_per_logit=12 * D):
    visible = heads * n * (n + 1) / 2
    return flops_per_logit * visible / (ms * 1e-3) / 1e12


def inputs(n, heads=H, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    xt = torch.randn(1, heads, n, D, generator=g, device="cuda", dtype=torch.bfloat16)
    xs = (xt.float() + 0.3 * torch.randn(xt.shape, generator=g, device="cuda")).bfloat16()
    return xs, xt


def ours_fns(xs, xt, deterministic=False):
    relation_kl = torch.ops.linear_ard.relation_kl
    relation_kl_backward = torch.ops.linear_ard.relation_kl_backward
    s = 1 / math.sqrt(D)
    xs_leaf = xs.detach().requires_grad_()

    def fwd():
        return relation_kl(xs, None, xt, None, None, True, s, s, deterministic)

    kl, lse_s, lse_t = fwd()
    grad = torch.ones_like(kl)

    def bwd():
        return relation_kl_backward(grad, xs, None, xt, None, lse_s, lse_t, None, True, s, s, deterministic)

    def fwd_bwd():
        xs_leaf.grad = None
        relation_kl(xs_leaf, None, xt, None, None, True, s, s, deterministic)[0].sum().backward()

    return fwd, bwd, fwd_bwd


def naive_fwd_bwd(xs, xt):
    """Dense fp32 PyTorch as a user would write it, the speed and memory baseline (lean on purpose:
    the oracle, tests/python/relation_kl_dense.py, also materialises masks and keeps empty rows
    apart, which would put it out of memory a size earlier)."""
    s = 1 / math.sqrt(D)
    n = xs.shape[2]
    mask = torch.ones(n, n, dtype=torch.bool, device="cuda").triu(1)
    xs_leaf = xs.detach().requires_grad_()

    def run():
        xs_leaf.grad = None
        zs = (s * xs_leaf.float() @ xs_leaf.float().transpose(-1, -2)).masked_fill(mask, float("-inf"))
        with torch.no_grad():
            zt = (s * xt.float() @ xt.float().transpose(-1, -2)).masked_fill(mask, float("-inf"))
            logp_t = torch.log_softmax(zt, -1)
            del zt
        logp_s = torch.log_softmax(zs, -1)
        kl = (logp_t.exp() * (logp_t - logp_s)).nan_to_num(0.0).sum(-1)
        kl.sum().backward()

    return run


def sdpa_fwd_bwd(xs):
    q = xs.detach().requires_grad_()
    k = xs.detach().clone().requires_grad_()
    v = xs.detach().clone().requires_grad_()

    def run():
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()

    return run


def plot_memory(results, path):
    """Peak extra memory against n (paper's memory-scaling figure); needs matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (the JSON has the numbers)")
        return
    fig, ax = plt.subplots(figsize=(5, 3.5))
    curve = results["memory_curve"] or results["rows"]
    ax.plot([r["n"] for r in curve], [r["peak_gib"] for r in curve], "o-", label="linear-ard CUDA")
    dense = [r for r in results["rows"] if r["naive_gib"]]
    ax.plot([r["n"] for r in dense], [r["naive_gib"] for r in dense], "s-", label="naive dense PyTorch")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("peak extra memory (GiB)")
    ax.set_title(f"relation-KL fwd+bwd, H={H}, d={D}, bf16, {results['device']}", fontsize=8)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def size_row(n, no_naive):
    """Ours (default and deterministic backward), SDPA and the naive dense baseline at length n: a row."""
    xs, xt = inputs(n)
    reps = 10 if n <= 8192 else 5
    fwd, bwd, fwd_bwd = ours_fns(xs, xt)
    t_f, t_b, t_fb = time_ms(fwd, reps), time_ms(bwd, reps), time_ms(fwd_bwd, reps)
    mem = peak_extra_gib(fwd_bwd)
    _, det_bwd, det_fwd_bwd = ours_fns(xs, xt, deterministic=True)
    t_db, t_dfb = time_ms(det_bwd, reps), time_ms(det_fwd_bwd, reps)
    t_sdpa = time_ms(sdpa_fwd_bwd(xs), reps)
    naive_ms, naive_mem = None, None
    try:
        if not no_naive:
            run = naive_fwd_bwd(xs, xt)
            naive_ms = time_ms(run, 3, warmup=1)
            naive_mem = peak_extra_gib(run)
    except torch.OutOfMemoryError:
        pass
    del xs, xt
    torch.cuda.empty_cache()
    return dict(n=n, fwd_ms=t_f, bwd_ms=t_b, fwd_bwd_ms=t_fb, tflops=useful_tflops(n, H, t_fb), peak_gib=mem,
                naive_ms=naive_ms, naive_gib=naive_mem, sdpa_ms=t_sdpa, det_bwd_ms=t_db, det_fwd_bwd_ms=t_dfb)


def size_rows(sizes, no_naive):
    print("| n | ours fwd ms (share) | ours bwd ms (share) | ours fwd+bwd ms | useful TFLOP/s | ours peak GiB "
          "| naive ms (peak GiB) | SDPA fwd+bwd ms | ours/SDPA | naive/ours "
          "| deterministic bwd ms | deterministic fwd+bwd ms (x default) | deterministic/SDPA |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for n in sizes:
        r = size_row(n, no_naive)
        rows.append(r)
        naive = f"{r['naive_ms']:.2f} ({r['naive_gib']:.1f})" if r["naive_ms"] else ("-" if no_naive else "out of memory")
        ratio = f"{r['naive_ms'] / r['fwd_bwd_ms']:.1f}x" if r["naive_ms"] else "-"
        t_f, t_b, t_fb, t_sdpa, t_dfb = r["fwd_ms"], r["bwd_ms"], r["fwd_bwd_ms"], r["sdpa_ms"], r["det_fwd_bwd_ms"]
        share_f = t_f / (t_f + t_b)
        print(f"| {n // 1024}K | {t_f:.3f} ({share_f:.0%}) | {t_b:.3f} ({1 - share_f:.0%}) | {t_fb:.3f} | "
              f"{r['tflops']:.0f} | {r['peak_gib']:.3f} | {naive} | {t_sdpa:.3f} | {t_fb / t_sdpa:.2f}x | {ratio} | "
              f"{r['det_bwd_ms']:.3f} | {t_dfb:.3f} ({t_dfb / t_fb:.2f}x) | {t_dfb / t_sdpa:.2f}x |", flush=True)
    return rows


def memory_curve():
    print("\nmemory vs n (ours, fwd+bwd, one run each; time is that one run):")
    print("| n | peak extra GiB | fwd+bwd ms | useful TFLOP/s |")
    print("|---|---|---|---|")
    curve = []
    for n in (1024, 4096, 16384, 65536, 131072, 262144):
        xs, xt = inputs(n)
        _, _, fwd_bwd = ours_fns(xs, xt)
        mem = peak_extra_gib(fwd_bwd)
        ms = time_ms(fwd_bwd, 1, warmup=0)
        curve.append(dict(n=n, peak_gib=mem, fwd_bwd_ms=ms))
        print(f"| {n // 1024}K | {mem:.3f} | {ms:.1f} | {useful_tflops(n, H, ms):.0f} |", flush=True)
        del xs, xt
        torch.cuda.empty_cache()
    return curve


def llama3_8b_rows():
    print("\nLLaMA-3-8B final layer, three relations Q/Q (32 heads), K/K and V/V (8 heads), d=128, fwd+bwd:")
    print("| n | Q/Q ms | K/K ms | V/V ms | total ms | deterministic total ms (x default) |")
    print("|---|---|---|---|---|---|")
    rows = []
    for n in (4096, 8192):
        pairs = (inputs(n, 32, 1), inputs(n, 8, 2), inputs(n, 8, 3))
        fns = [ours_fns(a, b)[2] for a, b in pairs]
        det_fns = [ours_fns(a, b, deterministic=True)[2] for a, b in pairs]
        times = [time_ms(f, 5) for f in fns]
        total = time_ms(lambda: [f() for f in fns], 5)
        det_total = time_ms(lambda: [f() for f in det_fns], 5)
        rows.append(dict(n=n, q_ms=times[0], k_ms=times[1], v_ms=times[2], total_ms=total, det_total_ms=det_total))
        print(f"| {n // 1024}K | {times[0]:.2f} | {times[1]:.2f} | {times[2]:.2f} | {total:.2f} | "
              f"{det_total:.2f} ({det_total / total:.2f}x) |", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--quick", action="store_true", help="n = 1K..16K only, no long-context curve")
    ap.add_argument("--sizes", help="comma-separated n: only these, no memory curve or LLaMA case (iterating)")
    ap.add_argument("--plot-from", help="only redraw the plot from a saved JSON into --out")
    ap.add_argument("--no-naive", action="store_true", help="skip the naive dense PyTorch baseline")
    ap.add_argument("--json", help="with --sizes: write the rows to this JSON file")
    args = ap.parse_args()
    if args.plot_from:
        with open(args.plot_from) as f:
            plot_memory(json.load(f), os.path.join(args.out, "relation_kl_memory.png"))
        return
    torch.ops.load_library(os.environ["LINEAR_ARD_LIBRARY"])
    dev = torch.cuda.get_device_name()
    print(f"device: {dev}; torch {torch.__version__}; B=1 H={H} d={D} causal bf16 self-relation")
    sizes = [1024, 2048, 4096, 8192, 16384] + ([] if args.quick else [32768])
    if args.sizes:
        sizes = [int(v) for v in args.sizes.split(",")]
    results = {"device": dev, "rows": size_rows(sizes, args.no_naive), "memory_curve": [], "llama3_8b": []}
    if args.sizes:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
        return
    if not args.quick:
        results["memory_curve"] = memory_curve()
    results["llama3_8b"] = llama3_8b_rows()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench_relation_kl_gpu.json"), "w") as f:
        json.dump(results, f, indent=1)
    plot_memory(results, os.path.join(args.out, "relation_kl_memory.png"))


if __name__ == "__main__":
    main()
