#!/usr/bin/env python3
"""One markdown table of restore runs, read from each run's training_summary.json: the validation
record the run chose (KL to native, perplexity beside native's, passkey per length), the step it
chose, the tokens trained and whether the run diverged. A run folder without a summary is listed as
missing. Then the arm the restore's own rule would keep among them (`select: kl_passkey`: the lowest
validation KL among the arms whose mean passkey is within --margin of the best), and with --plot
the trade-off: validation KL against mean passkey, one point an arm. Used by
experiments/default_sweep.sh.

    experiments/sweep_table.py RUNS_DIR ARM [ARM ...] [--margin 0.1] [--plot FIG.png]
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


def chosen(summary):
    return (summary.get("validation") or {}).get("chosen") or {}


def winner(summaries, margin):
    """The arm the kl_passkey rule keeps: lowest val KL among arms within `margin` of the best mean passkey."""
    scored = {n: chosen(s) for n, s in summaries.items() if chosen(s).get("val_kl") is not None}
    if not scored:
        return None
    best = max(c.get("passkey_mean", 0.0) for c in scored.values())
    eligible = [n for n, c in scored.items() if c.get("passkey_mean", 0.0) >= best - margin]
    return min(eligible, key=lambda n: scored[n]["val_kl"])


def plot(summaries, keep, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for name, summary in summaries.items():
        c = chosen(summary)
        if c.get("val_kl") is None:
            continue
        x, y = c["val_kl"], 100 * c.get("passkey_mean", 0.0)
        ax.scatter([x], [y], color="tab:red" if name == keep else "tab:blue", zorder=3)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.set_xlabel("validation KL to native (nats/token; lower is better)")
    ax.set_ylabel("validation passkey, mean over lengths (%)")
    ax.set_title("restore settings: short-text fidelity against retrieval")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", type=Path, help="folder holding one restore output folder per arm")
    parser.add_argument("arms", nargs="+", help="the arms, in the table's order")
    parser.add_argument("--margin", type=float, default=0.1, help="select.passkey_margin")
    parser.add_argument("--plot", type=Path, help="the trade-off figure (KL against passkey)")
    args = parser.parse_args()
    summaries = {}
    print("| arm | val KL to native | val PPL | passkey % | chosen stage:step | tokens | stopped early |")
    print("|---|---:|---|---|---|---:|---|")
    for name in args.arms:
        path = args.runs / name / "training_summary.json"
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            print(f"| {name} | missing ({type(e).__name__}) | | | | | |")
            continue
        summaries[name] = summary
        print(row(name, summary))
    keep = winner(summaries, args.margin)
    if keep:
        print(f"\nkept by select kl_passkey (margin {args.margin}): {keep}")
    if args.plot and summaries:
        plot(summaries, keep, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
