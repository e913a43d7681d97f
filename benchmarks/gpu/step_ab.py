#!/usr/bin/env python3
"""The real model's restore step (SmolLM2-135M's config, random weights), several `linear-ard` binaries
and settings interleaved in one process, for A/B figures from the same GPU and call (bench_step_real's
run_ours: median of 6 timed steps after 2 warm-up). Prints one table last.

    benchmarks/gpu/step_ab.py --cli old=build-old/src/cli/linear-ard --cli new=build/src/cli/linear-ard \
        --variant overlap_teacher=false --variant overlap_teacher=true --model .devmodel/config
"""
import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_step_real as bench  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cli", action="append", required=True, metavar="NAME=PATH")
    p.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                   help="settings of one variant (repeatable; default: one variant, no settings)")
    p.add_argument("--model", default=str(ROOT / ".devmodel" / "config"), help="HF folder: config and tokenizer")
    p.add_argument("--cases", default="ard:2048:8")
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    clis = dict(c.split("=", 1) for c in args.cli)
    variants = [v.split(",") if v else [] for v in (args.variant or [""])]
    work = Path(tempfile.mkdtemp(prefix="step_ab_"))
    model = bench.random_copy(args.model, work)
    vocab = json.loads((Path(model) / "config.json").read_text())["vocab_size"]
    results = {}
    for case in bench.parse_cases(args.cases):
        ids = np.random.default_rng(0).integers(0, vocab, size=((1 + 8 * case["batch"]) * case["ctx"],), dtype=np.uint32)
        npy = work / f"ids_{case['kind']}_{case['ctx']}.npy"
        np.save(npy, ids)
        for r in range(args.repeats):
            for name, cli in clis.items():
                for settings in variants:
                    run = argparse.Namespace(cli=cli, model=model, factor=4, warmup=2, steps=6, profile_steps=0,
                                             ours_set=settings, tiny=False)
                    o = bench.run_ours(case, run, npy, work / f"{name}_{len(results)}_{r}")
                    key = (f"{case['kind']} {case['ctx']} x {case['batch']}", name, " ".join(settings) or "-")
                    results.setdefault(key, []).append(case["ctx"] * case["batch"] / o["step_s"])
                    print(f"{key} run {r}: {results[key][-1]:,.0f} tokens/s (first loss {o['first_loss']:.6f})", flush=True)
    print("\n| case | binary | settings | tokens/s (runs) | median |\n|---|---|---|---|---:|")
    for (case, name, settings), v in results.items():
        print(f"| {case} | {name} | {settings} | {', '.join(f'{x:,.0f}' for x in v)} | {statistics.median(v):,.0f} |")


if __name__ == "__main__":
    main()
