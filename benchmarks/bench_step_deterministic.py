#!/usr/bin/env python3
"""The cost of `deterministic: true` on a whole restore step, beside the default step from the same
run, and whether it delivers what it promises (bitwise-identical weights from two runs).

For each case (kind:ctx:batch, as benchmarks/bench_step_real.py takes them), `linear-ard restore`
runs four times on the same random ids: twice with the default backward and twice with
`deterministic=true`, each with bench_step_real.py's settings (the steps alone: no passkey, one
held-out block, the last step's weights). The table gives the median step time of each setting (the
faster of its two runs), the ratio, and for each setting whether its two runs wrote the same
`model.safetensors` bytes.

    python benchmarks/bench_step_deterministic.py --cli build/src/cli/linear-ard [--model DIR]
        [--cases ard:4096:8,stage2:32768:1] [--steps 6] [--warmup 2] [--out DIR]

A benchmark, not a test: it prints a table last (markdown) and writes it with the raw figures as JSON.
"""

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_step_real as real  # noqa: E402  (this benchmark's cases are that one's restore runs)


def digest(folder):
    return hashlib.sha256((Path(folder) / "model" / "model.safetensors").read_bytes()).hexdigest()


def measure(case, args, npy, out, deterministic):
    """Two runs of one setting: the faster median step time, the peak memory, equal bytes or not."""
    runs = []
    for attempt in range(2):
        work = out / f"{'det' if deterministic else 'default'}{attempt}"
        work.mkdir(parents=True, exist_ok=True)
        runs.append(real.run_ours(case, args_with(args, deterministic), npy, work))
    return {"step_s": min(r["step_s"] for r in runs), "peak_bytes": max(r["peak_bytes"] for r in runs),
            "bitwise": digest(runs[0]["folder"]) == digest(runs[1]["folder"])}


def args_with(args, deterministic):
    copy = argparse.Namespace(**vars(args))
    copy.ours_set = [*args.ours_set, f"deterministic={'true' if deterministic else 'false'}"]
    return copy


def table(rows, device, model):
    lines = [f"device: {device}; torch {torch.__version__}; `linear-ard restore` steps of {model}",
             "", "| case | default step ms | deterministic step ms | cost | default: 2 runs bitwise | "
             "deterministic: 2 runs bitwise |", "|---|---:|---:|---:|---|---|"]
    for r in rows:
        d, t = r["default"], r["deterministic"]
        lines.append(f"| {r['kind']} {r['ctx']} x {r['batch']} | {d['step_s'] * 1e3:.1f} | {t['step_s'] * 1e3:.1f} | "
                     f"{(t['step_s'] / d['step_s'] - 1) * 100:+.1f} % | {'equal' if d['bitwise'] else 'differ'} | "
                     f"{'equal' if t['bitwise'] else 'differ'} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cli", default=str(real.ROOT / "build" / "src" / "cli" / "linear-ard"))
    p.add_argument("--model", help="HF folder (default: the imported SmolLM2-135M-Instruct)")
    p.add_argument("--cases", default="ard:4096:8,stage2:32768:1", help="kind:ctx:batch,...")
    p.add_argument("--factor", type=int, default=4, help="PI factor of the student")
    p.add_argument("--steps", type=int, default=6, help="timed steps (median)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--out", default=None, help="folder for table.md, results.json and the runs")
    p.add_argument("--tiny", action="store_true", help="bundled 3.7M model on the CPU (smoke run)")
    args = p.parse_args()
    args.profile_steps, args.ours_set = 0, []
    if args.tiny and args.cases == p.get_default("cases"):
        args.cases = "ard:64:2,stage2:128:1"
    args.model = args.model or real.default_model(args)
    config = json.loads((Path(args.model) / "config.json").read_text())
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_step_deterministic_"))
    rng = np.random.default_rng(0)
    rows = []
    for case in real.parse_cases(args.cases):
        name = f"{case['kind']}_{case['ctx']}"
        n_blocks = 1 + (args.warmup + args.steps) * case["batch"]
        npy = out / f"ids_{name}.npy"
        out.mkdir(parents=True, exist_ok=True)
        np.save(npy, rng.integers(0, config["vocab_size"], size=(n_blocks * case["ctx"],), dtype=np.uint32))
        print(f"bench_step_deterministic: {case['kind']} ctx {case['ctx']} x batch {case['batch']} ...", flush=True)
        rows.append({**case, "default": measure(case, args, npy, out / name, False),
                     "deterministic": measure(case, args, npy, out / name, True)})
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() and not args.tiny else "CPU (smoke run)"
    text = table(rows, device, Path(args.model).name)
    (out / "table.md").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps({"device": device, "rows": rows}, indent=1))
    print(text)


if __name__ == "__main__":
    main()
