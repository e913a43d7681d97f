#!/usr/bin/env python3
"""Is overlap_teacher's occasional difference from the plain order a race or the operator's dX atomics'
order? Runs one case of tests/gpu/check_teacher_overlap.py (default: the last layer) several times each:
bf16 with the overlap off, on, on with profiled steps, and off/on beside a second process keeping
the GPU busy (which changes the timing, not the stream order); fp32 (the SIMT operator: no atomics)
off, on and profiled. Prints every run's gradient
norms and, last, the distinct values of steps 5 and 6 per setting.

    benchmarks/gpu/teacher_overlap_order.py --build build-gpu [--runs 3] [--case ard_all]
"""
import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
import check_teacher_overlap as check  # noqa: E402

BUSY = """import time, torch
a = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
t0 = time.time()
while time.time() - t0 < 600:
    for _ in range(20): a.add_(a @ a, alpha=1e-6)
    torch.cuda.synchronize(); time.sleep(0.001)
"""
# (label, settings, GPU kept busy by a second process)
SETTINGS = (("off", ["overlap_teacher=false"], False), ("on", ["overlap_teacher=true"], False),
            ("profiled", ["overlap_teacher=true", "profile_steps=2"], False),
            ("off+busy", ["overlap_teacher=false"], True), ("on+busy", ["overlap_teacher=true"], True))


def grad_norms(build, config, out, settings):
    return {m["step"]: m["grad_norm"] for m in check.metrics(build, config, out, settings) if "grad_norm" in m}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--case", default="ard_last", choices=sorted(check.CASES))
    args = p.parse_args()
    seen = {}
    with tempfile.TemporaryDirectory(prefix="overlap_order_") as tmp:
        for dtype in ("bf16", "fp32"):
            root = Path(tmp) / dtype
            root.mkdir()
            config = check.setup(root, "cuda")
            for label, settings, busy in SETTINGS:
                if dtype == "fp32" and busy:
                    continue
                for i in range(args.runs):
                    load = subprocess.Popen([sys.executable, "-c", BUSY]) if busy else None
                    if load:
                        time.sleep(3)
                    try:
                        g = grad_norms(args.build, config, root / f"{label}_{i}",
                                       check.CASES[args.case] + settings + [f"dtype={dtype}"])
                    finally:
                        if load:
                            load.kill()
                            load.wait()
                    print(f"{dtype} {label:9s} run {i}: " + " ".join(f"s{s}={v:.10g}" for s, v in sorted(g.items())), flush=True)
                    seen.setdefault((dtype, label), []).append(g)
    print("\n| dtype | overlap | step-5 gradient norms (runs) | step-6 |\n|---|---|---|---|")
    for (dtype, label), runs in seen.items():
        c5, c6 = Counter(round(g[5], 10) for g in runs), Counter(round(g[6], 6) for g in runs)
        print(f"| {dtype} | {label} | {', '.join(f'{k:.10g} ({n})' for k, n in c5.items())} | "
              f"{', '.join(f'{k:.6g} ({n})' for k, n in c6.items())} |")


if __name__ == "__main__":
    main()
