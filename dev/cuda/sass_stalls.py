#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's per-instruction SASS table.

    ncu -i REPORT.ncu-rep --page source --csv --print-source sass > sass.csv   # (on the GPU machine)
    dev/cuda/sass_stalls.py sass.csv[.xz] [--top 25]

Prints the warp-stall samples by opcode (the SASS mnemonic without modifiers) and by stall reason,
then the instructions with the most samples, each with its address offset, its share of the
samples, its top reasons and its execution count. Samples are Nsight's "Warp Stall Sampling (All
Samples)": one sample a warp every sampling interval, charged to the instruction the warp is at.
The export has no column for some reasons (the GMMA and warpgroup-arrive stalls): an instruction
whose samples are mostly of those is marked "unlisted".
"""
import argparse
import collections
import csv
import io
import lzma
import sys


def read_rows(path):
    opener = lzma.open if path.endswith(".xz") else open
    try:
        with opener(path, "rt", newline="") as f:
            text = f.read()
    except (OSError, lzma.LZMAError, UnicodeDecodeError) as e:
        sys.exit(f"sass_stalls: {path}: cannot read: {e}")
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"Address"')), None)
    if start is None:
        sys.exit(f"sass_stalls: {path}: no \"Address\" header line (not an ncu --page source --csv export)")
    return list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


def num(v):
    try:
        return float(v.replace(",", ""))
    except (AttributeError, ValueError):
        return 0.0


def opcode(src):
    words = src.strip().split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    rows = read_rows(args.csv)
    needed = {"Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"}
    if not rows or needed - set(rows[0]):
        sys.exit(f"sass_stalls: {args.csv}: no instruction rows with the columns {sorted(needed)}")
    reasons = [k for k in rows[0] if k.startswith("stall_") and "(Not Issued)" not in k]
    total = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rows) or 1.0
    base = int(rows[0]["Address"], 16)
    by_op, by_reason = collections.Counter(), collections.Counter()
    for r in rows:
        s = num(r["Warp Stall Sampling (All Samples)"])
        by_op[opcode(r["Source"])] += s
        for k in reasons:
            by_reason[k] += num(r[k])
    print(f"{len(rows)} instructions, {int(total)} samples")
    by_reason["stall_unlisted (gmma, warpgroup arrive)"] = max(0.0, total - sum(by_reason.values()))
    print("\nby reason: " + ", ".join(f"{k[6:]} {100 * v / total:.1f}%" for k, v in by_reason.most_common(10)))
    print("by opcode: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_op.most_common(14)))
    print(f"\n{'offset':>7} {'share':>6} {'executed':>9}  instruction  [top reasons]")
    top = sorted(rows, key=lambda r: -num(r["Warp Stall Sampling (All Samples)"]))[: args.top]
    for r in sorted(top, key=lambda r: int(r["Address"], 16)):
        s = num(r["Warp Stall Sampling (All Samples)"])
        why = sorted(((num(r[k]), k[6:]) for k in reasons), reverse=True)[:3]
        unlisted = s - sum(num(r[k]) for k in reasons)  # reasons the export has no column for
        if unlisted > 0.5 * s:
            why = [(unlisted, "unlisted (gmma, warpgroup arrive)")] + why[:2]
        why = ", ".join(f"{n} {100 * v / s:.0f}%" for v, n in why if v > 0)
        print(f"{int(r['Address'], 16) - base:#7x} {100 * s / total:5.1f}% {int(num(r['Instructions Executed'])):9d}  "
              f"{r['Source'].strip()[:60]}  [{why}]")


if __name__ == "__main__":
    main()
