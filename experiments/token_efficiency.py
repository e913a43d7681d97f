#!/usr/bin/env python3
"""Token efficiency of LinearARD against CPT (the paper's ~60x claim; docs/results-small.md): from a
`linear-ard eval compare` report holding LinearARD runs (names starting with "ard") and CPT runs at
several budgets (names starting with "cpt"), and the runs' training_summary.json (exact token
budgets), finds the CPT budget whose short-context quality equals each LinearARD run's, by
interpolating the CPT curve linearly in log(tokens) (perplexity in log too), and prints the ratio
CPT tokens / LinearARD tokens as a markdown table. A ratio above 1 means LinearARD needs fewer
tokens; where CPT's smallest budget already does better, or its largest does worse, the ratio is a
bound (<= or >).

    experiments/token_efficiency.py REPORT.json RUNS_DIR [--svg PLOT.svg]

--svg also draws held-out perplexity against training tokens (both axes logarithmic, matplotlib):
the CPT curve and each LinearARD run as a point, as PLOT.svg and PLOT.png.
"""
import json
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # plot.py
from plot import figure_save, plt  # scripts/plot.py: matplotlib set up for files (Agg, SVG text)


def tokens_of(runs, name):
    path = os.path.join(runs, name, "training_summary.json")
    try:
        return json.load(open(path))["token_budget"]["tokens"]
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"token_efficiency: cannot read the token budget of run '{name}' from {path}: {e}")


def crossing(curve, target, lower_is_better, log_value):
    """Tokens at which the (tokens, value) curve, sorted by tokens, first reaches target."""
    def f(v):
        return math.log(v) if log_value else v

    def good(v):
        return v <= target if lower_is_better else v >= target

    if good(curve[0][1]):
        return "<=", curve[0][0]
    for (t0, v0), (t1, v1) in zip(curve, curve[1:]):
        if good(v1):
            if f(v1) == f(v0):
                return "=", t1
            w = (f(target) - f(v0)) / (f(v1) - f(v0))
            return "=", math.exp(math.log(t0) + w * (math.log(t1) - math.log(t0)))
    return ">", curve[-1][0]


def figure(cpt, ard, reference):
    """Held-out perplexity against training tokens, both axes logarithmic (matplotlib): the CPT curve,
    each LinearARD run as a square, the reference as a dashed line. cpt, ard: [(name, tokens, ppl)];
    reference: (name, ppl)."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ax.plot([t for _, t, _ in cpt], [p for _, _, p in cpt], marker="o", color="#1f77b4", label="CPT (full model)")
    for name, t, p in cpt:
        ax.annotate(name, (t, p), textcoords="offset points", xytext=(5, 5), color="#1f77b4", fontsize=8)
    ax.plot([t for _, t, _ in ard], [p for _, _, p in ard], linestyle="none", marker="s", markersize=8,
            color="#d62728", label="LinearARD")
    for name, t, p in ard:
        ax.annotate(name, (t, p), textcoords="offset points", xytext=(7, -3), color="#d62728", fontsize=8)
    ax.axhline(reference[1], color="#888", linestyle="--", label=f"{reference[0]} {reference[1]:.1f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("training tokens")
    ax.set_ylabel("held-out perplexity")
    ax.set_title("held-out perplexity vs training tokens", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def main():
    args = sys.argv[1:]
    svg = None
    if "--svg" in args:
        i = args.index("--svg")
        if i + 1 >= len(args):
            sys.exit("token_efficiency: --svg needs a file name")
        svg = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    report = json.load(open(args[0]))
    runs = args[1]
    metrics = [("held-out PPL", lambda m: m["ppl"][0]["ppl"], True, True)]
    if all("tasks" in m for m in report["models"]):
        metrics.append(("cloze acc %", lambda m: 100 * m["tasks"]["linear_ard"]["avg"], False, False))
    ard = [m for m in report["models"] if m["name"].startswith("ard")]
    cpt = [m for m in report["models"] if m["name"].startswith("cpt")]
    if not ard or len(cpt) < 2:
        sys.exit("token_efficiency: the report needs an 'ard*' model and at least two 'cpt*' models")
    print("| LinearARD run | tokens | metric | value | CPT tokens for the same value | CPT / LinearARD tokens |")
    print("|---|---:|---|---:|---:|---:|")
    for label, value, lower, log_value in metrics:
        curve = sorted((tokens_of(runs, m["name"]), value(m)) for m in cpt)
        for m in ard:
            t = tokens_of(runs, m["name"])
            rel, ct = crossing(curve, value(m), lower, log_value)
            ratio = ct / t
            print(f"| {m['name']} | {t / 1e6:.2f} M | {label} | {value(m):.2f} | {rel if rel != '=' else ''}"
                  f"{ct / 1e6:.2f} M | {rel if rel != '=' else ''}{ratio:.2f}x |")
    print()
    if svg:
        ppl = lambda m: m["ppl"][0]["ppl"]  # noqa: E731
        ref = next((m for m in report["models"] if m["name"] == report.get("reference")), None)
        fig = figure(sorted(((m["name"], tokens_of(runs, m["name"]), ppl(m)) for m in cpt), key=lambda x: x[1]),
                     [(m["name"], tokens_of(runs, m["name"]), ppl(m)) for m in ard],
                     (ref["name"], ppl(ref)) if ref else (cpt[0]["name"], ppl(cpt[0])))
        figure_save(fig, os.path.splitext(svg)[0])
    print("CPT curve: " + ", ".join(f"{m['name']} {tokens_of(runs, m['name']) / 1e6:.2f} M tokens "
                                    f"PPL {m['ppl'][0]['ppl']:.2f}" for m in sorted(cpt, key=lambda m: tokens_of(runs, m["name"]))))


if __name__ == "__main__":
    main()
