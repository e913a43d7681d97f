#!/usr/bin/env python3
"""Figures of linear-ard's outputs, drawn with matplotlib as PNG + SVG from the files the commands
write, so they can be restyled by editing this script or by calling its functions:

    scripts/plot.py curves OUT/metrics.jsonl [-o OUT/training_curves]    # restore / pretrain
                                        [--summary OUT/training_summary.json]
    scripts/plot.py compare REPORT.json [-o REPORT]                      # eval compare -o REPORT
    scripts/plot.py tasks RESULTS.json... [--names a b] [-o OUT]         # eval tasks / lm-eval results
    scripts/plot.py diagnose OUT/diagnose.json [-o OUT/diagnose]          # diagnose -o OUT
    scripts/plot.py tune OUT/tune.json [-o OUT/tune]                      # tune

`linear-ard restore|pretrain` draw OUT/training_curves.{png,svg}, `linear-ard eval compare -o
REPORT` draws REPORT.{png,svg}, `linear-ard diagnose -o OUT` OUT/diagnose.{png,svg} and
`linear-ard tune` OUT/tune.{png,svg} with this script when they finish (not with LINEAR_ARD_NO_PLOT=1).

Every series is drawn with markers (a one-point series shows), step axes have integer ticks and no
offset notation, each held-out metric gets its own axes (a curve near zero is not flattened by one
near 1), and a positive quantity spanning more than two decades is drawn on a log scale.
"""

import argparse
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
# SVG text stays text: searchable, and editable in a vector editor.
matplotlib.rcParams["svg.fonttype"] = "none"
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

# Held-out monitors of metrics.jsonl's "eval" lines (restore: the validation's KL to the native
# model, the relation losses and the monitored KLs; pretrain: LM loss and perplexity), each drawn
# on its own axes; restore's perplexity beside the native model's, and passkey retrieval per length.
MONITORS = ("val_kl", "relation_loss", "loss_q", "loss_k", "loss_v", "logit_kl", "attention_kl", "loss_lm", "perplexity")
DECADES_FOR_LOG = 2.0


def _axes_finish(ax, title, xlabel, integer_x=True):
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    if integer_x:
        # A run of one or two steps: widen the axis so that the integer locator has ticks to place
        # (matplotlib's own margin would leave it 0.945 ... 1.05).
        xs = [x for line in ax.get_lines() for x in line.get_xdata()]
        if xs and max(xs) - min(xs) < 2:
            ax.set_xlim(min(xs) - 1, max(xs) + 1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.ticklabel_format(axis="x", useOffset=False)
    if ax.get_yscale() == "linear":
        ax.ticklabel_format(axis="y", useOffset=False)
    ax.grid(True, alpha=0.3)
    if len(ax.get_lines()) > 1:
        ax.legend(fontsize=8)


def _scale_for(ax, values):
    """Log y when every value is positive and they span more than DECADES_FOR_LOG decades."""
    positive = [v for v in values if v is not None and math.isfinite(v)]
    if positive and min(positive) > 0 and math.log10(max(positive) / min(positive)) > DECADES_FOR_LOG:
        ax.set_yscale("log")


def _line(ax, xs, ys, label):
    ax.plot(xs, ys, marker="o", markersize=3 if len(xs) > 20 else 5, linewidth=1.2, label=label)


def _grid(count, width=6.0, height=3.2):
    cols = 1 if count == 1 else 2
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = list(axes.flat)
    for ax in flat[count:]:
        ax.set_visible(False)
    return fig, flat[:count]


def metrics_read(path):
    """metrics.jsonl records; a last line cut short by an interrupted run is skipped."""
    records = []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return records


def validation_panels(evals):
    """Restore's validation beyond the monitors: the student's perplexity beside the native
    model's, and passkey accuracy per length."""
    panels = []
    if any("val_ppl" in r for r in evals):
        panels.append(("validation perplexity",
                       [(k, [(r["step"], r[k]) for r in evals if k in r]) for k in ("val_ppl", "native_ppl")]))
    lengths = sorted({int(n) for r in evals for n in r.get("passkey", {})})
    if lengths:
        panels.append(("validation passkey accuracy",
                       [(f"{n} tokens", [(r["step"], r["passkey"][str(n)]) for r in evals if str(n) in r.get("passkey", {})])
                        for n in lengths]))
    return panels


def curves_figure(records, chosen_step=None):
    """The training-dynamics figure: optimised loss per stage, its parts, one panel per held-out
    monitor, the validation's perplexities and passkey, and the learning rate, against the optimizer
    step; `chosen_step` (the validation whose weights the run wrote) marked on the held-out panels."""
    train = [r for r in records if not r.get("eval")]
    evals = [r for r in records if r.get("eval")]
    panels = []
    if train:
        stages = sorted({r.get("stage", 1) for r in train})
        panels.append(("training loss (optimised)",
                       [(f"stage {s}", [(r["step"], r["loss"]) for r in train if r.get("stage", 1) == s])
                        for s in stages]))
        parts = sorted({k for r in train for k in r if k.startswith("loss_")})
        if parts:
            panels.append(("loss parts", [(k, [(r["step"], r[k]) for r in train if k in r]) for k in parts]))
    for key in MONITORS:
        points = [(r["step"], r[key]) for r in evals if key in r]
        if points:
            panels.append((f"held-out {key}", [(key, points)]))
    panels += validation_panels(evals)
    if train and any("lr" in r for r in train):
        panels.append(("learning rate", [("lr", [(r["step"], r["lr"]) for r in train if "lr" in r])]))
    if not panels:
        raise ValueError("no metrics to plot")
    fig, axes = _grid(len(panels))
    for ax, (title, series) in zip(axes, panels):
        for label, points in series:
            _line(ax, [p[0] for p in points], [p[1] for p in points], label)
        _scale_for(ax, [p[1] for _, points in series for p in points])
        if chosen_step is not None and (title.startswith("held-out") or title.startswith("validation")):
            ax.axvline(chosen_step, color="0.3", linestyle="--", linewidth=1, label=f"model (step {chosen_step})")
        _axes_finish(ax, title, "optimizer step")
    fig.tight_layout()
    return fig


def tasks_headline(results, task):
    """A tasks report's number for `task` (lm-eval's results JSON, or ours with its linear_ard
    section): our avg_metric when present, else acc, else acc_norm."""
    metric = results.get("linear_ard", {}).get("avg_metric", "acc")
    values = results["results"][task]
    for key in (f"{metric},none", "acc,none", "acc_norm,none"):
        if key in values:
            return values[key]
    raise KeyError(f"task {task} has no acc or acc_norm")


def _tasks_order(results):
    return results.get("linear_ard", {}).get("order") or sorted(results["results"])


def tasks_panel(ax, names, reports):
    """Grouped bars: each task's headline (%) per model, then Avg. over the tasks."""
    tasks = _tasks_order(reports[0])
    groups = tasks + ["Avg."]
    width = 0.8 / len(reports)
    for m, (name, report) in enumerate(zip(names, reports)):
        values = [100 * tasks_headline(report, t) if t in report["results"] else float("nan") for t in tasks]
        finite = [v for v in values if math.isfinite(v)]
        values.append(sum(finite) / len(finite) if finite else float("nan"))
        xs = [g + (m - (len(reports) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, values, width=width, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30 if len(groups) > 6 else 0, ha="right" if len(groups) > 6 else "center")
    ax.set_ylabel("%")
    ax.set_title("tasks (headline metric)", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    if len(reports) > 1:
        ax.legend(fontsize=8)


def _passkey_by_length(passkey):
    sums = {}
    for row in passkey["rows"]:
        sums.setdefault(row["length"], []).append(100 * row["accuracy"])
    return sorted((length, sum(v) / len(v)) for length, v in sums.items())


def compare_figure(report):
    """`eval compare`'s figure: perplexity, passkey accuracy and RULER Avg. against length (one line
    per model), and the tasks as grouped bars."""
    models = report["models"]
    panels = []
    if any("ppl" in m for m in models):
        panels.append(("perplexity", "context length (tokens)",
                       [(m["name"], [(r["ctx_len"], r["ppl"]) for r in m["ppl"]]) for m in models if "ppl" in m]))
    if any("passkey" in m for m in models):
        panels.append(("passkey accuracy (%, mean over depths)", "prompt length (tokens)",
                       [(m["name"], _passkey_by_length(m["passkey"])) for m in models if "passkey" in m]))
    if any("ruler" in m for m in models):
        panels.append(("RULER Avg. (%)", "length (tokens)",
                       [(m["name"], [(length, m["ruler"]["avg"][str(length)]) for length in m["ruler"]["lengths"]])
                        for m in models if "ruler" in m]))
    with_tasks = [m for m in models if "tasks" in m]
    count = len(panels) + (1 if with_tasks else 0)
    if count == 0:
        raise ValueError("the report holds no evaluation to plot")
    fig, axes = _grid(count)
    for ax, (title, xlabel, series) in zip(axes, panels):
        lengths = sorted({p[0] for _, points in series for p in points})
        for label, points in series:
            _line(ax, [p[0] for p in points], [p[1] for p in points], label)
        if len(lengths) > 1 and lengths[-1] / lengths[0] >= 4:
            ax.set_xscale("log", base=2)
        ax.set_xticks(lengths)
        ax.set_xticklabels([str(x) for x in lengths])
        ax.minorticks_off()
        if title == "perplexity":
            _scale_for(ax, [p[1] for _, points in series for p in points])
        _axes_finish(ax, title, xlabel, integer_x=False)
    if with_tasks:
        tasks_panel(axes[-1], [m["name"] for m in with_tasks], [m["tasks"] for m in with_tasks])
    fig.tight_layout()
    return fig


RELATIONS = (("q", "Q/Q"), ("k", "K/K"), ("v", "V/V"))


def _bars(ax, groups, series, ylabel, title):
    """Grouped bars: one group per entry of `groups`, one bar per (label, values) of `series`."""
    width = 0.8 / max(1, len(series))
    for i, (label, values) in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, values, width=width, label=label)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize=8)


def diagnose_figure(report):
    """`diagnose`'s figure: KL to native by scaling, passkey accuracy against length per model, and
    the relation KL (Q/Q, K/K, V/V) by layer per scaling (one panel each with every layer, else
    grouped bars of the final layer), and at the relation length when measured."""
    rows = report["rows"]
    scaled = [r for r in rows if r["name"] != "native"]
    if not scaled:
        raise ValueError("the report holds no scaling")
    layers = scaled[0]["relation"]["layers"]
    count = 2 + (3 if len(layers) > 1 else 1) + (1 if "relation_long" in scaled[0] else 0)
    fig, axes = _grid(count)
    names = [r["name"] for r in scaled]
    _bars(axes[0], names, [(f"C = {report['ctx']}", [r["kl"] for r in scaled])], "nats / token",
          f"KL to native at {report['ctx']} tokens")
    lengths = report["passkey"]["lengths"]
    for r in rows:
        points = [(n, 100 * r["passkey"][str(n)]) for n in lengths if str(n) in r["passkey"]]
        if points:
            _line(axes[1], [p[0] for p in points], [p[1] for p in points], r["name"])
    axes[1].set_xscale("log", base=2)
    axes[1].set_xticks(lengths)
    axes[1].set_xticklabels([str(n) for n in lengths])
    axes[1].minorticks_off()
    axes[1].set_ylim(-5, 105)
    _axes_finish(axes[1], f"passkey accuracy (%, {report['passkey']['prompts_per_length']} prompts a length)",
                 "prompt length (tokens)", integer_x=False)
    if len(layers) > 1:
        for ax, (key, label) in zip(axes[2:5], RELATIONS):
            for r in scaled:
                _line(ax, r["relation"]["layers"], r["relation"][key], r["name"])
            _scale_for(ax, [v for r in scaled for v in r["relation"][key]])
            _axes_finish(ax, f"{label} relation KL by layer (C = {report['ctx']})", "layer")
    else:
        _bars(axes[2], names, [(label, [r["relation"][key][-1] for r in scaled]) for key, label in RELATIONS],
              "nats / row", f"final layer's relation KL (C = {report['ctx']})")
    if "relation_long" in scaled[0]:
        _bars(axes[-1], names, [(label, [r["relation_long"][key][-1] for r in scaled]) for key, label in RELATIONS],
              "nats / row", f"final layer's relation KL at {report['relation_length']} tokens")
    fig.tight_layout()
    return fig


def tune_figure(t):
    """`tune`'s figure: each scored trial's chosen validation, KL to native against mean passkey
    accuracy (the choice's two criteria; the winner and the final run marked), or its KL alone when
    the runs measured no retrieval."""
    scored = [r for r in t["trials"] if isinstance(r.get("chosen"), dict) and "val_kl" in r["chosen"]]
    if not scored:
        raise ValueError("the report holds no scored trial")
    winner = t["trials"][t["winner"]]["name"] if "winner" in t else None
    fig, (ax,) = _grid(1, width=7.0, height=4.2)
    if all("passkey_mean" in r["chosen"] for r in scored):
        for r in scored:
            c = r["chosen"]
            won = r["name"] == winner
            ax.scatter([c["val_kl"]], [100 * c["passkey_mean"]], marker="*" if won else "o", s=160 if won else 40,
                       color="C1" if won else "C0")
            ax.annotate(" ".join(r["settings"]) or r["name"], (c["val_kl"], 100 * c["passkey_mean"]), fontsize=7,
                        xytext=(4, 4), textcoords="offset points")
        final = t.get("final", {}).get("chosen")
        if isinstance(final, dict) and "passkey_mean" in final:
            ax.scatter([final["val_kl"]], [100 * final["passkey_mean"]], marker="D", color="C2",
                       label="the winner's full run")
            ax.legend(fontsize=8)
        ax.set_ylabel("mean passkey accuracy (%)")
        _axes_finish(ax, "tune: each trial's chosen validation (winner: star)", "KL to native (nats / token)",
                     integer_x=False)
    else:
        _bars(ax, [" ".join(r["settings"]) or r["name"] for r in scored],
              [("val KL", [r["chosen"]["val_kl"] for r in scored])], "KL to native (nats / token)",
              f"tune: each trial's chosen validation (winner: {winner})")
        ax.tick_params(axis="x", labelrotation=20, labelsize=7)
    fig.tight_layout()
    return fig


def tasks_figure(names, reports):
    fig, (ax,) = _grid(1, width=max(6.0, 1.2 * (len(_tasks_order(reports[0])) + 1)))
    tasks_panel(ax, names, reports)
    fig.tight_layout()
    return fig


def figure_save(fig, stem):
    """Writes <stem>.png and <stem>.svg; returns their paths."""
    paths = [Path(f"{stem}.png"), Path(f"{stem}.svg")]
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, dpi=150)
    plt.close(fig)
    return paths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    curves = sub.add_parser("curves", help="training curves from a restore / pretrain metrics.jsonl")
    curves.add_argument("metrics")
    curves.add_argument("-o", "--output", help="output stem (default: training_curves beside the metrics)")
    curves.add_argument("--summary", help="training_summary.json whose chosen validation step is marked "
                                          "(default: the one beside the metrics, if any)")
    compare = sub.add_parser("compare", help="eval compare's JSON report")
    compare.add_argument("report")
    compare.add_argument("-o", "--output", help="output stem (default: the report without .json)")
    tasks = sub.add_parser("tasks", help="tasks results JSON files (eval tasks' or lm-eval's)")
    tasks.add_argument("results", nargs="+")
    tasks.add_argument("--names", nargs="+", help="a name per file (default: the file names)")
    tasks.add_argument("-o", "--output", required=True, help="output stem")
    diagnose = sub.add_parser("diagnose", help="diagnose's JSON report")
    diagnose.add_argument("report")
    diagnose.add_argument("-o", "--output", help="output stem (default: the report without .json)")
    tune = sub.add_parser("tune", help="tune's tune.json")
    tune.add_argument("report")
    tune.add_argument("-o", "--output", help="output stem (default: the report without .json)")
    args = parser.parse_args(argv)
    try:
        if args.command == "curves":
            summary = Path(args.summary) if args.summary else Path(args.metrics).with_name("training_summary.json")
            chosen = None
            if args.summary or summary.is_file():
                chosen = json.loads(summary.read_text()).get("validation", {}).get("chosen_step")
            fig = curves_figure(metrics_read(args.metrics), chosen)
            stem = args.output or str(Path(args.metrics).with_name("training_curves"))
        elif args.command in ("compare", "diagnose", "tune"):
            figure = {"compare": compare_figure, "diagnose": diagnose_figure, "tune": tune_figure}[args.command]
            fig = figure(json.loads(Path(args.report).read_text()))
            stem = args.output or str(Path(args.report).with_suffix(""))
        else:
            names = args.names or [Path(p).stem for p in args.results]
            if len(names) != len(args.results):
                parser.error(f"--names has {len(names)} names for {len(args.results)} files")
            fig = tasks_figure(names, [json.loads(Path(p).read_text()) for p in args.results])
            stem = args.output
    except (OSError, ValueError, KeyError) as e:
        print(f"plot.py: error: {e}", file=sys.stderr)
        return 1
    figure_save(fig, stem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
