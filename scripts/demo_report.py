#!/usr/bin/env python3
"""Prints the demo's table from what scripts/demo.sh wrote under OUT: the restore's
training_summary.json and the evaluation `OUT/eval/compare.json` (`linear-ard eval compare` of the
native, the scaled and the restored model, with the KL to the native model).

    scripts/demo_report.py OUT
"""
import json
import sys
from collections import defaultdict
from pathlib import Path

LABELS = {"native": "native", "scaled": "{rope}, not restored", "restored": "{rope}, restored"}


def passkey_by_length(passkey):
    """length -> accuracy in %, over every depth and sample, and the prompts a length."""
    hits, total = defaultdict(float), defaultdict(int)
    for row in passkey["rows"]:
        hits[row["length"]] += row["accuracy"] * row["samples"]
        total[row["length"]] += row["samples"]
    return {n: 100 * hits[n] / total[n] for n in total}, max(total.values())


def rope_text(summary):
    rope = summary["student_rope"]
    name = {"linear": "PI", "yarn": "YaRN", "dynamic": "NTK"}.get(rope.get("rope_type"), rope.get("rope_type"))
    return f"{name} x{rope.get('factor', 1):g}"


def main():
    out = Path(sys.argv[1])
    summary = json.loads((out / "restored" / "training_summary.json").read_text())
    report = json.loads((out / "eval" / "compare.json").read_text())
    native_ctx = summary["teacher_max_position_embeddings"]
    print(f"demo: restored with {summary['tokens_trained']:,} tokens in {summary['train_time_s']:.1f} s "
          f"on {summary['device']} (seed {summary.get('seed', '?')})")
    rows, prompts = [], 0
    for m in report["models"]:
        keys, prompts = passkey_by_length(m["passkey"])
        ppl = m["ppl"][0]
        rows.append((LABELS[m["name"]].format(rope=rope_text(summary)), ppl.get("kl", 0.0), ppl["ppl"], keys,
                     m["name"] == "native"))
    lengths = sorted({n for r in rows for n in r[3]})
    ctx = report["models"][0]["ppl"][0]["ctx_len"]
    print(f"demo: {'model':26s} {'KL to native':>12s} {'PPL @ ' + str(ctx):>10s}"
          + "".join(f"{'passkey @ ' + str(n):>16s}" for n in lengths))
    for label, kl, ppl, keys, native in rows:
        cells = "".join(f"{'-':>16s}" if native and n > native_ctx else f"{keys[n]:15.0f}%" for n in lengths)
        print(f"demo: {label:26s} {kl:12.3f} {ppl:10.2f}{cells}")
    print(f"demo: passkey: {prompts} prompts a length; native beyond its context of {native_ctx} not shown; "
          f"KL in nats a token on the evaluation text")


if __name__ == "__main__":
    main()
