#!/usr/bin/env python3
"""The memory plan's error: each command's estimate (the `[memory]` line of `eval`, the `memory
plan` line of `restore` / `pretrain`) against what it used, on the CPU (peak RSS of the process less
that of a process that only loaded the libraries, `linear-ard inspect`) or on a GPU (the CUDA
caching allocator's peak, which `restore` / `pretrain` record as peak_memory_bytes).

    dev/memory_plan_error.py BUILD_DIR [--device cpu|cuda] [--model models/demo] [--json OUT.json]

Prints one row per case: the estimate, the measured use and the error (estimate / measured - 1:
positive means the plan over-estimates, the safe side). docs/reliability.md quotes the output.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNITS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def bytes_of(text):
    number, unit = text.split()
    return float(number) * UNITS[unit]


def run(binary, args):
    """(stdout + stderr, peak RSS in bytes) of one process."""
    p = subprocess.Popen([str(binary), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"memory_plan_error: {' '.join(map(str, args))} failed:\n{out[-3000:]}")
    return out, usage.ru_maxrss * 1024


def estimate(output):
    m = re.search(r"needs an estimated (\S+ \S+) \(", output)
    if not m:
        sys.exit(f"memory_plan_error: no plan line in:\n{output[-2000:]}")
    return bytes_of(m.group(1))


def cases(model, text, device, work):
    ev = ("--device", device, "--dtype", "fp32")
    for ctx, batch in ((256, 1), (256, 16), (1024, 4), (4096, 1)):
        yield f"eval ppl ctx {ctx} x batch {batch}", ("eval", "ppl", model, "--text", text, "--ctx", ctx,
                                                      "--batch-size", batch, *ev)
    for length in (1000, 4000, 16000):
        yield f"eval passkey length {length}", ("eval", "passkey", model, "--lengths", length, "--depths", 0.5,
                                                "--max-new-tokens", 4, *ev)
    pretrain = ("pretrain", ROOT / "configs" / "pretrain_demo.yaml", f"pretrain.tokenizer={model}",
                f"data=[{text}]", "steps=2", f"device={device}", "dtype=fp32", "eval_every=0")
    for ctx, batch in ((256, 8), (256, 32)):
        yield f"pretrain ctx {ctx} x batch {batch}", (*pretrain, f"ctx_len={ctx}", f"batch_size={batch}",
                                                      f"output={work / f'p{ctx}_{batch}'}")
    restore = ("restore", ROOT / "configs" / "demo_cpu.yaml", f"teacher={model}", f"data=[{text}]", "steps=2",
               f"device={device}", "dtype=fp32", "eval_every=0")
    for trainable, batch in (("qkv", 8), ("qkv", 32), ("full", 8)):
        yield f"restore {trainable} ctx 256 x batch {batch}", (*restore, f"trainable={trainable}", "ctx_len=256",
                                                               f"batch_size={batch}", f"output={work / f'r{trainable}{batch}'}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--model", default=str(ROOT / "models" / "demo"))
    p.add_argument("--json", help="also write the rows here")
    args = p.parse_args()
    binary = Path(args.build) / "src" / "cli" / "linear-ard"
    text = ROOT / "data" / "demo" / "restore.jsonl"
    _, baseline = run(binary, ("inspect", args.model))
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, command in cases(args.model, text, args.device, Path(work)):
            output, peak = run(binary, command)
            planned = estimate(output)
            if args.device == "cuda" or command[0] != "eval":
                out = Path(next(c for c in command if str(c).startswith("output=")).split("=", 1)[1]) \
                    if command[0] != "eval" else None
                if args.device == "cuda" and out is None:
                    continue  # eval reports no allocator peak: GPU figures come from the training rows
                measured = json.loads((out / "training_summary.json").read_text())["peak_memory_bytes"] \
                    if args.device == "cuda" else peak - baseline
            else:
                measured = peak - baseline
            rows.append({"case": name, "estimate": planned, "measured": measured, "error": planned / measured - 1})
            print(f"{name:34s} estimate {planned / 2**20:9.1f} MiB  measured {measured / 2**20:9.1f} MiB  "
                  f"error {100 * rows[-1]['error']:+6.1f} %", flush=True)
    print(f"baseline (libraries, `inspect`): {baseline / 2**20:.1f} MiB")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": args.device, "baseline": baseline, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
