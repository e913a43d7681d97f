#!/usr/bin/env python3
"""The project's performance figures as one markdown table, each beside its peer, the ratio and the
target (met / missed), read from the files one `dev/gpu/gpu_check.sh` run wrote into OUT_DIR:

    dev/gpu/perf_table.py OUT_DIR

- bench_relation_kl_gpu.json (benchmarks/bench_relation_kl_gpu.py): the relation-KL operator's
  fwd+bwd at every n >= 8K beside torch SDPA fwd+bwd of the same run; target <= 1.0x SDPA.
- bench_restore.log (benchmarks/bench_restore_gpu.cpp's tables): the 7B-shape restore step beside
  the authors' trainer on the same GPU model (benchmarks/authors/README.md, not rerun: H200 where
  gpu.txt names one, else H100); last 1 layer >= 5x their tokens/s within their peak memory, for
  Q/K/V masters and for their own trainable set (LoRA r1024 on q/k/v), the LoRA set's peak <= 0.6x
  theirs with every layer recomputed; all 32 layers >= 50x.
- step_bench/results.json (benchmarks/bench_step_real.py): SmolLM2-135M's step beside plain PyTorch
  of the same run; every step >= 50 % MFU, and the LM-loss steps at 32K (stage2, cpt) >= 2x
  PyTorch's tokens/s.

A file that is missing gives "not run" rows; one that cannot be read as its producer writes it stops
the script with an error naming it.
"""

import argparse
import json
import os
import re
import sys

OPERATOR_SDPA_MAX = 1.0
OPERATOR_MIN_N = 8192
# The authors' trainer (their train.py, LoRA r1024 on q/k/v) by GPU model, benchmarks/authors/README.md (H100
# 2026-11-23; H200: the faster of 2026-11-21's 2,237 and 2026-12-01's 2,247): last 1 layer at 4K tokens/s
# and peak GiB, all 32 layers at 4K tokens/s.
AUTHORS = {"H100": {"last1_tok_s": 2128.0, "last1_peak_gib": 40.4, "all_tok_s": 158.0},
           "H200": {"last1_tok_s": 2247.0, "last1_peak_gib": 40.4, "all_tok_s": 169.0}}
QKV, LORA, LAST1, ALL32 = "qkv", "lora_qkv r=1024", ("last 1", 4096), ("all 32", 4096)
# (figure, bench_restore_gpu run (trainable, checkpoint_layers), table row (scope, ctx), measure,
#  authors' figure (a key of AUTHORS[gpu]), target ratio); "tok_s": ratio >= target, "peak": <= target.
# The speed rows come with their peak memory: 5x counts within the authors' memory.
RESTORE_ROWS = [
    ("7B restore step, last 1 layer, 4K (QKV, recompute)", (QKV, "on"), LAST1, "tok_s", "last1_tok_s", 5.0),
    ("7B restore step, last 1 layer, 4K (QKV, recompute): peak memory", (QKV, "on"), LAST1, "peak",
     "last1_peak_gib", 1.0),
    ("7B restore step, last 1 layer, 4K (QKV, first 8 layers recomputed)", (QKV, "first 8"), LAST1, "tok_s",
     "last1_tok_s", 5.0),
    ("7B restore step, last 1 layer, 4K (QKV, first 8 layers recomputed): peak memory", (QKV, "first 8"),
     LAST1, "peak", "last1_peak_gib", 1.0),
    ("7B restore step, last 1 layer, 4K (LoRA r1024, recompute): peak memory", (LORA, "on"), LAST1, "peak",
     "last1_peak_gib", 0.6),
    ("7B restore step, last 1 layer, 4K (LoRA r1024, no recompute)", (LORA, "off"), LAST1, "tok_s",
     "last1_tok_s", 5.0),
    ("7B restore step, last 1 layer, 4K (LoRA r1024, no recompute): peak memory", (LORA, "off"), LAST1, "peak",
     "last1_peak_gib", 1.0),
    ("7B restore step, all 32 layers, 4K (QKV, recompute)", (QKV, "on"), ALL32, "tok_s", "all_tok_s", 50.0),
]
STEP_MFU_MIN = 0.5
STEP_LM_X = 2.0  # the LM-loss steps at 32K against plain PyTorch
STEP_LM_MIN_CTX = 32768
RESTORE_HEADER = re.compile(r"^bench_restore_gpu: .* shape \(.*; trainable (qkv|lora_qkv r=\d+) .*"
                            r"checkpoint_layers (on|off|first \d+);")


class Malformed(Exception):
    """An input file that is not what its producer writes."""


def row(figure, ours, peer="-", ratio="-", target="-", result="-"):
    return (figure, ours, peer, ratio, target, result)


def not_run(figure, path, target="-"):
    return row(figure, f"not run (no {os.path.basename(path)})", target=target, result="not run")


def verdict(ok):
    return "met" if ok else "missed"


def load_json(path):
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise Malformed(f"not JSON ({e})") from None


# ---- the operator ----------------------------------------------------------------------------------

def operator_rows(path):
    figure, target = "relation KL fwd+bwd (B=1 H=32 d=128 bf16)", f"<= {OPERATOR_SDPA_MAX}x SDPA"
    if not os.path.exists(path):
        return [not_run(figure, path, target)]
    rows = []
    for r in load_json(path)["rows"]:
        n, ours, sdpa = int(r["n"]), float(r["fwd_bwd_ms"]), float(r["sdpa_ms"])
        if n < OPERATOR_MIN_N:
            continue
        ratio = ours / sdpa
        rows.append(row(f"relation KL fwd+bwd, n = {n // 1024}K (B=1 H=32 d=128 bf16)", f"{ours:.3f} ms",
                        f"SDPA fwd+bwd {sdpa:.3f} ms (same run)", f"{ratio:.2f}x",
                        target, verdict(ratio <= OPERATOR_SDPA_MAX)))
    return rows or [row(figure, f"not run (no n >= {OPERATOR_MIN_N // 1024}K in {os.path.basename(path)})",
                        target=target, result="not run")]


# ---- the 7B-shape restore step ---------------------------------------------------------------------

def restore_cells(line):
    """{step_s, tok_s, peak} of one table row (None for out of memory), keyed by (scope, ctx)."""
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) != 10:
        raise Malformed(f"a table row of {len(cells)} cells, not 10: {line.strip()!r}")
    key = (cells[0], int(cells[1]))
    if cells[2] == "out of memory":
        return key, None
    return key, {"step_s": float(cells[2]), "tok_s": float(cells[3]), "peak": float(cells[4])}


def restore_runs(path):
    """{(trainable, checkpoint_layers): {(scope, ctx): cells or None}} of a bench_restore_gpu log
    (the last run of each setting); lines outside the tables (profiles, errors) are skipped."""
    runs, current = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            header = RESTORE_HEADER.match(line)
            if header:
                current = runs[header.groups()] = {}
            elif line.startswith("|") and not line.startswith(("| layers distilled", "|---")):
                if current is None:
                    raise Malformed(f"a table row before any 'bench_restore_gpu: ... shape' line: "
                                    f"{line.strip()!r}")
                try:
                    key, cells = restore_cells(line)
                except ValueError as e:
                    raise Malformed(f"{e} in {line.strip()!r}") from None
                current[key] = cells
    return runs


def anchor_gpu(out_dir):
    """The GPU model whose authors' figures the 7B rows compare with: H200 where gpu_check.sh's gpu.txt
    (nvidia-smi's CSV) names one, else H100."""
    try:
        with open(os.path.join(out_dir, "gpu.txt"), encoding="utf-8") as f:
            return "H200" if "H200" in f.read() else "H100"
    except OSError:
        return "H100"


def restore_row(spec, runs, missing, gpu):
    """One figure of RESTORE_ROWS beside the authors' figure on `gpu`; `missing` is the ours cell when its
    run or row is absent."""
    figure, run, key, measure, anchor_key, target_x = spec
    authors, anchor = AUTHORS[gpu][anchor_key], f"authors' trainer, {gpu} (benchmarks/authors)"
    if measure == "tok_s":
        peer, target = f"{authors:,.0f} tok/s, {anchor}", f">= {target_x:g}x tok/s"
    else:
        peer, target = f"{authors:.1f} GiB, {anchor}", f"<= {target_x:g}x peak"
    if key not in runs.get(run, {}):
        return row(figure, missing, peer, target=target, result="not run")
    cells = runs[run][key]
    if cells is None:
        return row(figure, "out of memory", peer, target=target, result="missed")
    ratio = cells[measure] / authors
    ours = f"{cells['tok_s']:,.0f} tok/s" if measure == "tok_s" else f"{cells['peak']:.1f} GiB"
    met = ratio >= target_x if measure == "tok_s" else ratio <= target_x
    return row(figure, ours, peer, f"{ratio:.2f}x", target, verdict(met))


def restore_rows(path):
    name, gpu = os.path.basename(path), anchor_gpu(os.path.dirname(path))
    if not os.path.exists(path):
        return [restore_row(spec, {}, f"not run (no {name})", gpu) for spec in RESTORE_ROWS]
    runs = restore_runs(path)
    return [restore_row(spec, runs, f"not run (no such row in {name})", gpu) for spec in RESTORE_ROWS]


# ---- SmolLM2-135M's step ---------------------------------------------------------------------------

def mfu(x):
    return "-" if x is None else f"{100 * float(x):.1f} %"


def step_target(kind, ctx, ours_mfu, ratio):
    """(target, result) of a case: MFU >= STEP_MFU_MIN, and for the LM-loss steps at 32K also
    >= STEP_LM_X PyTorch's tokens/s; an unknown MFU is not met."""
    target, met = f">= {100 * STEP_MFU_MIN:g} % MFU", ours_mfu is not None and float(ours_mfu) >= STEP_MFU_MIN
    if kind != "ard" and ctx >= STEP_LM_MIN_CTX:
        target, met = target + f", >= {STEP_LM_X:g}x PyTorch", met and ratio >= STEP_LM_X
    return target, verdict(met)


def step_figure(kind, ctx, batch):
    return f"SmolLM2-135M step, {kind} {ctx} x {batch}"


def step_rows(path):
    figure = "SmolLM2-135M step"
    if not os.path.exists(path):
        return [not_run(figure, path, f">= {100 * STEP_MFU_MIN:g} % MFU")]
    rows = []
    for r in load_json(path)["rows"]:
        kind, ctx = r["kind"], int(r["ctx"])
        ours, peer = float(r["ours_tok_s"]), float(r["peer_tok_s"])
        target, result = step_target(kind, ctx, r["ours_mfu"], ours / peer)
        rows.append(row(step_figure(kind, ctx, int(r["batch"])), f"{ours:,.0f} tok/s (MFU {mfu(r['ours_mfu'])})",
                        f"PyTorch {peer:,.0f} tok/s (MFU {mfu(r['peer_mfu'])}, same run)", f"{ours / peer:.2f}x",
                        target, result))
    return rows or [row(figure, f"not run (no case in {os.path.basename(path)})", result="not run")]


# ---- the table ---------------------------------------------------------------------------------------

def rows_read(reader, path):
    try:
        return reader(path)
    except (Malformed, KeyError, TypeError, ValueError, ZeroDivisionError) as e:
        what = f"no field {e}" if isinstance(e, KeyError) else str(e)
        sys.exit(f"perf_table: {path}: malformed ({what})")
    except OSError as e:
        sys.exit(f"perf_table: cannot read {path}: {e}")


def table(out_dir):
    rows = rows_read(operator_rows, os.path.join(out_dir, "bench_relation_kl_gpu.json"))
    rows += rows_read(restore_rows, os.path.join(out_dir, "bench_restore.log"))
    rows += rows_read(step_rows, os.path.join(out_dir, "step_bench", "results.json"))
    lines = ["| figure | ours | peer | ours / peer | target | result |", "|---|---:|---|---:|---|---|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir", help="the folder dev/gpu/gpu_check.sh wrote ($OUT, default ./gpu_out)")
    args = p.parse_args()
    if not os.path.isdir(args.out_dir):
        sys.exit(f"perf_table: {args.out_dir} is not a folder")
    print(f"\nPerformance figures ({args.out_dir}; peers from the same run unless named otherwise)\n")
    print(table(args.out_dir))


if __name__ == "__main__":
    main()
