#!/usr/bin/env python3
"""One markdown table of restore runs, read from each run's training_summary.json: the validation
record the run chose (KL to native, perplexity beside native's, passkey per length), the step it
chose, the tokens trained and whether the run diverged. A run folder without a summary is listed as
missing. Used by experiments/default_sweep.sh.

    experiments/sweep_table.py RUNS_DIR ARM [ARM ...]
"""
import argparse
import json
import sys
from pathlib import Path


def row(name, summary):
    """The table's cells for one run's summary (a dict as restore writes it)."""
    validation = summary.get("validation") or {}
    chosen = validation.get("chosen") or {}
    passkey = chosen.get("passkey") or {}
    lengths = " / ".join(f"{float(passkey[k]) * 100:.0f}" for k in sorted(passkey, key=int)) or "–"
    keys = " / ".join(f"{int(k) // 1024}K" for k in sorted(passkey, key=int))
    kl, ppl, native = chosen.get("val_kl"), chosen.get("val_ppl"), chosen.get("native_ppl")
    cell = (lambda x, f: "–" if x is None else f.format(x))
    stop = f"diverged at step {summary['diverged'].get('step', '?')}" if isinstance(summary.get("diverged"), dict) else ""
    return (f"| {name} | {cell(kl, '{:.3f}')} | {cell(ppl, '{:.2f}')} (native {cell(native, '{:.2f}')}) | "
            f"{lengths} ({keys}) | {chosen.get('stage', '–')}:{validation.get('chosen_step', '–')} | "
            f"{summary.get('tokens_trained', summary.get('tokens', '–'))} | {stop or 'no'} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, help="folder holding one restore output folder per arm")
    parser.add_argument("arms", nargs="+", help="the arms, in the table's order")
    args = parser.parse_args()
    print("| arm | val KL to native | val PPL | passkey % | chosen stage:step | tokens | stopped early |")
    print("|---|---:|---|---|---|---:|---|")
    for name in args.arms:
        path = args.runs / name / "training_summary.json"
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"| {name} | missing ({type(e).__name__}) | | | | | |")
            continue
        print(row(name, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
