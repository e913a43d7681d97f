#!/usr/bin/env python3
"""Prints the demo's table from the files scripts/demo.sh wrote under OUT: the restore's
training_summary.json and the eval reports ppl_{native,scaled,restored}.json and
passkey_{...}.json.

    scripts/demo_report.py OUT PPL_CTX
"""
import json
import sys
from collections import defaultdict
from pathlib import Path

MODELS = (("native", "native (RoPE of 8192)"), ("scaled", "PI x4, not restored"),
          ("restored", "PI x4, restored (LinearARD)"))


def passkey_by_length(path):
    """length -> accuracy in %, over every depth and sample."""
    hits, total = defaultdict(float), defaultdict(int)
    for row in json.loads(path.read_text())["rows"]:
        hits[row["length"]] += row["accuracy"] * row["samples"]
        total[row["length"]] += row["samples"]
    return {n: 100 * hits[n] / total[n] for n in total}


def main():
    out, ctx = Path(sys.argv[1]), sys.argv[2]
    s = json.loads((out / "restored" / "training_summary.json").read_text())
    b, a = s["eval_before"], s["eval_after"]
    print(f"demo: restored with {s['tokens_trained']:,} tokens in {s['train_time_s']:.1f} s on {s['device']}; "
          f"held-out relation loss {b['relation_loss']:.3f} -> {a['relation_loss']:.3f}, "
          f"logit KL to the native model {b['logit_kl']:.3f} -> {a['logit_kl']:.3f}")
    keys = {m: passkey_by_length(out / "eval" / f"passkey_{m}.json") for m, _ in MODELS}
    lengths = sorted({n for k in keys.values() for n in k})
    head = f"demo: {'model':30s} {'PPL @ ' + ctx:>11s}" + "".join(f"{'passkey @ ' + str(n):>16s}" for n in lengths)
    print(head)
    for m, label in MODELS:
        ppl = json.loads((out / "eval" / f"ppl_{m}.json").read_text())["results"][0]["ppl"]
        cells = "".join(f"{keys[m][n]:15.0f}%" if n in keys[m] else f"{'-':>16s}" for n in lengths)
        print(f"demo: {label:30s} {ppl:11.2f}{cells}")


if __name__ == "__main__":
    main()
