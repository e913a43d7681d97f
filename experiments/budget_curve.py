#!/usr/bin/env python3
"""The token-efficiency curve of the real-model experiment (docs/results.md): for each
method, short-context quality and long-context retrieval against training tokens, read from the
markdown reports of `linear-ard eval compare` (the files committed in experiments/results/real).

    experiments/budget_curve.py K=REPORT.md [K=REPORT.md ...] [--unit TOKENS] [--rename OLD=NEW ...]
                            [--rec-task TASK] [-o PLOT]

K is the budget multiple of the report's runs (1, 4, 16: K x the paper's 4.26M tokens, --unit).
A row counts when its model name is a method (ard, cpt, cpt_qkv, longred) optionally followed by
_x<K> (the names experiments/experiment_real.sh gives); several reports of one K (e.g. the main table
and its RULER report) merge. Prints one markdown table (PPL @2K, Rec., RULER average per method
and budget, and the KL to native at 2K where the reports have it) and with -o draws each of these
that has values as a panel against tokens (log axis) as PLOT.svg and PLOT.png, with the native and
unrestored models of the reports as reference lines.
"""
import argparse
import re
import sys
from pathlib import Path

from matplotlib.ticker import NullFormatter

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # plot.py
from plot import figure_save, plt  # scripts/plot.py: matplotlib set up for files (Agg, SVG text)
from report_tables import tables  # experiments/report_tables.py: the reports' markdown tables

METHODS = {"ard": "LinearARD", "ard_tuned": "LinearARD, stage-2 lr searched", "cpt": "CPT (full)",
           "cpt_qkv": "CPT (Q/K/V)", "longred": "LongReD"}
REFERENCES = ("native", "pi4")
COLUMNS = {"ppl": ("Perplexity", "PPL@2048"), "rec": ("Tasks", "Rec."), "ruler": ("RULER", "Avg. all"),
           "kl": ("KL to native", "KL@2048")}


def cell(sections, section, column, model):
    """The float of `column` for `model` in the report's first table whose title starts with
    `section`, or None (no such column or row, or a cell that is not a number, such as a dash)."""
    title = next((t for t in sections if t.startswith(section)), None)
    for row in sections.get(title, []):
        if row.get("model") == model:
            try:
                return float(row.get(column, ""))
            except ValueError:
                return None
    return None


def value(sections, key, model, rec_task=None):
    """Report column `key` for `model`; with rec_task, Rec. is that task's accuracy over the same
    report's native row's (in %), not the report's Rec. column (the mean over all of its tasks)."""
    if key == "rec" and rec_task:
        ours, native = cell(sections, "Tasks", rec_task, model), cell(sections, "Tasks", rec_task, "native")
        return None if ours is None or not native else 100.0 * ours / native
    return cell(sections, *COLUMNS[key], model)


def points(specs, rename, rec_task=None):
    """{(name, K): {metric: value}} over the reports, names being a method or a reference (a report's
    model names first go through `rename`; rec_task as in `value`)."""
    out = {}
    for spec in specs:
        k, sep, path = spec.partition("=")
        if not sep or not k.isdigit():
            sys.exit(f"budget_curve: '{spec}' is not K=REPORT.md (K the budget multiple, e.g. 4)")
        sections = tables(path, "budget_curve")
        models = {row["model"] for rows in sections.values() for row in rows if "model" in row}
        for model in models:
            m = re.fullmatch(r"(ard|ard_tuned|cpt|cpt_qkv|longred)(?:_x(\d+))?", rename.get(model, model))
            name = m.group(1) if m else model if model in REFERENCES else None
            if name is None or (m and m.group(2) and int(m.group(2)) != int(k)):
                continue
            entry = out.setdefault((name, 0 if name in REFERENCES else int(k)), {})
            for key in COLUMNS:
                v = value(sections, key, model, rec_task)
                if v is not None:
                    entry.setdefault(key, v)
    return out


def figure(pts, unit):
    keys = [key for key in COLUMNS if any(key in v for v in pts.values())]
    fig, axes = plt.subplots(1, len(keys), figsize=(4.4 * len(keys), 4), squeeze=False)
    axes = axes[0]
    labels = {"ppl": "PPL @2K, unseen sources (log)", "rec": "Rec. % vs native", "ruler": "RULER avg. % (8-32K)",
              "kl": "KL to native @2K (nats/token)"}
    for ax, key in zip(axes, keys):
        for method, label in METHODS.items():
            xs = sorted((k * unit, v[key]) for (n, k), v in pts.items() if n == method and key in v)
            if xs:
                ax.plot([x for x, _ in xs], [y for _, y in xs], marker="o", label=label)
        for ref, style in zip(REFERENCES, ("--", ":")):
            v = pts.get((ref, 0), {}).get(key)
            if v is not None:
                ax.axhline(v, color="#888", linestyle=style, label=f"{ref} {v:g}")
        ax.set_xscale("log")
        ticks = sorted({k * unit for _, k in pts if k})
        ax.set_xticks(ticks, [f"{t / 1e6:.1f}M" for t in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
        if key == "ppl":
            ax.set_yscale("log")
        ax.set_xlabel("training tokens")
        ax.set_title(labels[key], fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", help="K=REPORT.md")
    ap.add_argument("--unit", type=float, default=4_259_840, help="tokens of K=1 (the paper's budget)")
    ap.add_argument("--rename", nargs="*", default=[], metavar="OLD=NEW",
                    help="read a report's model OLD as NEW (e.g. s2lr3e-3=ard_tuned)")
    ap.add_argument("--rec-task", metavar="TASK",
                    help="Rec. = TASK's accuracy over the same report's native row's, so that reports with "
                         "different task sets compare (default: each report's Rec. column)")
    ap.add_argument("-o", dest="plot", help="write PLOT.svg and PLOT.png")
    args = ap.parse_args()
    if any("=" not in r for r in args.rename):
        sys.exit("budget_curve: --rename takes OLD=NEW pairs")
    pts = points(args.reports, dict(r.split("=", 1) for r in args.rename), args.rec_task)
    rows = sorted((n, k) for n, k in pts if n in METHODS)
    if not rows:
        sys.exit("budget_curve: no method rows (ard, cpt, cpt_qkv, longred[_xK]) in the reports")
    print("| method | budget | tokens | PPL @2K | Rec. % | RULER avg. % | KL to native @2K |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for n, k in rows:
        v = pts[(n, k)]
        cells = [f"{v[c]:.{3 if c == 'kl' else 2}f}" if c in v else "–" for c in COLUMNS]
        print(f"| {METHODS[n]} | {k}x | {k * args.unit / 1e6:.1f}M | " + " | ".join(cells) + " |")
    if args.plot:
        figure_save(figure(pts, args.unit), args.plot)


if __name__ == "__main__":
    main()
