#!/usr/bin/env python3
"""`overlap_teacher` (train/teacher_overlap.h) on CUDA: the teacher's forward on a second host thread
and CUDA stream beside the student's must train as the plain order does. Per objective that runs a
teacher (LinearARD on the last and on every layer, LongReD), `linear-ard restore` on a small random
LLaMA (GQA) on the GPU with overlap_teacher=true and =false, and a run whose first steps are profiled
(there the student's forward waits for the teacher's), in fp32 and in bf16:

- fp32 (the operator's SIMT kernels, no atomics): every logged figure of every step must agree to
  1e-9 relative (measured: to the last digit), so a stream race shows at once;
- bf16 (the tensor-core kernels, whose backward adds dX by atomics in a varying order: docs/kernel.md,
  "Determinism"): step 1 (before any update: only the atomics' order) to 1e-4 relative, later steps
  only finite and to 0.5, because bf16 updates amplify the atomics' order from run to run with the
  overlap off too (measured 2026-11-28, H200, benchmarks/gpu/teacher_overlap_order.py: the all-layer
  case's step-5 gradient norm took 2.507, 2.598 or 3.044 in runs of the plain order; docs/training.md).

A missing stream dependency (the teacher reading ids or weights not yet written, the loss reading Q/K/V
not yet computed) gives other figures from step 1 on. Exits non-zero on any failure.

    tests/gpu/check_teacher_overlap.py --build build-gpu
    tests/gpu/check_teacher_overlap.py --build build --device cpu   # smoke run: the inline path only
"""

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import tiny_teacher  # noqa: E402

# (step 1, later steps) relative tolerances by dtype: see the docstring.
TOLERANCES = {"fp32": (1e-9, 1e-9), "bf16": (1e-4, 0.5)}
CASES = {
    "ard_last": ["method=ard", "layers=last:1"],
    "ard_all": ["method=ard", "layers=all"],
    "longred": ["method=longred", "layers=all"],
}


def setup(root, device):
    rng = random.Random(5)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(150, 300))) + "." for _ in range(200)]
    teacher = tiny_teacher.teacher_make(root / "teacher", texts, hidden=256, intermediate=512, layers=4, heads=8,
                                        kv_heads=2, max_positions=512, vocab_size=400, qk_std=0.2, seed=7)
    tiny_teacher.data_write(root / "data.jsonl", texts)
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump({
        "teacher": str(teacher), "student_rope": {"rope_type": "linear", "factor": 4},
        "data": [str(root / "data.jsonl")], "ctx_len": 256, "batch_size": 4, "steps": 6, "lr": 1e-3,
        "warmup_steps": 1, "eval_every": 3, "device": device, "dtype": "bf16" if device == "cuda" else "fp32", "stage2": {"steps": 0}}))
    return path


def max_rel_diff(a, b, tolerances):
    """(largest relative difference between two runs' metric lines over its step's tolerance, where): inf if they
    differ in shape or keys."""
    if len(a) != len(b):
        return math.inf, f"{len(a)} against {len(b)} lines"
    worst = (0.0, "")
    for x, y in zip(a, b):
        if x.keys() != y.keys():
            return math.inf, f"keys {sorted(x)} against {sorted(y)}"
        for key in x:
            u, v = x[key], y[key]
            where = f"step {x.get('step')} {'eval ' if x.get('eval') else ''}{key}: {u!r} against {v!r}"
            if isinstance(u, (int, float)) and isinstance(v, (int, float)):
                if not (math.isfinite(u) and math.isfinite(v)):
                    d = 0.0 if u == v else math.inf
                else:
                    d = abs(u - v) / max(abs(u), abs(v), 1e-12)
            else:
                d = 0.0 if u == v else math.inf
            d /= tolerances[0] if x.get("step") == 1 else tolerances[1]  # in units of the step's tolerance
            if d > worst[0]:
                worst = (d, where)
    return worst


def metrics(build, config, out, settings):
    cmd = [str(Path(build) / "src" / "cli" / "linear-ard"), "restore", str(config), f"output={out}", *settings]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"FAIL {' '.join(cmd)}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    lines = [json.loads(line) for line in (Path(out) / "metrics.jsonl").read_text().splitlines()]
    # Times and memory are not what training computes: the overlap's second stream keeps blocks of
    # its own, so the validations' memory_bytes / memory_reserved_bytes differ by design.
    drop = ("step_time_s", "tokens_per_s", "peak_memory_bytes", "memory_bytes", "memory_reserved_bytes",
            "elapsed_s", "time_s")
    return [{k: v for k, v in m.items() if k not in drop} for m in lines]


def case_check(build, config, root, name, settings, dtype):
    """One case in one dtype: overlap on against off and profiled; prints a line, returns whether it passed."""
    runs = {label: metrics(build, config, root / f"{name}_{label}", settings + extra)
            for label, extra in (("on", ["overlap_teacher=true"]), ("off", ["overlap_teacher=false"]),
                                 ("profiled", ["overlap_teacher=true", "profile_steps=2"]))}
    losses = [m["loss"] for m in runs["on"] if "loss" in m]
    finite = all(isinstance(x, (int, float)) and math.isfinite(x) for x in losses)
    tolerances = TOLERANCES[dtype]
    diffs = {other: max_rel_diff(runs["on"], runs[other], tolerances) for other in ("off", "profiled")}
    worst = max(d for d, _ in diffs.values())
    ok = finite and len(losses) >= 6 and worst <= 1
    print(f"{'ok' if ok else 'FAIL'} {name} {dtype}: {len(runs['on'])} metric lines, losses "
          f"{', '.join(f'{x:.6f}' for x in losses)}; largest difference of overlap on against off and "
          f"profiled {worst:.2e} of its tolerance (step 1: {tolerances[0]:.0e}, later {tolerances[1]:.0e} relative)")
    for other, (d, where) in diffs.items():
        if d > 0:
            print(f"  on against {other}: {d:.2e} of the tolerance at {where}")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=str(ROOT / "build"))
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = p.parse_args()
    failures = 0
    dtypes = ("fp32", "bf16") if args.device == "cuda" else ("fp32",)
    with tempfile.TemporaryDirectory(prefix="overlap_") as tmp:
        root = Path(tmp)
        config = setup(root, args.device)
        for dtype in dtypes:
            (root / dtype).mkdir()
            for name, settings in CASES.items():
                failures += not case_check(args.build, config, root / dtype, name, settings + [f"dtype={dtype}"],
                                           dtype)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
