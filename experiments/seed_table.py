#!/usr/bin/env python3
"""Mean and 95 % interval over seeds of the reports of `linear-ard eval compare` (docs/results.md's
main table): a model named NAME_s<k> is seed k of NAME, NAME itself seed 0.

    experiments/seed_table.py REPORT.md [REPORT.md ...] [--models NAME ...] [-o TABLE.md] [--plot FIGURE]

Every number column of each section's first table (Perplexity, Tasks, Passkey accuracy, RULER) is
averaged per NAME over its seeds and printed as "mean ± h", h the half-width of the two-sided 95 %
Student-t interval over the seeds (n - 1 degrees of freedom); one seed prints its value alone. A
cell of a model found in several reports comes from the first report that has it (list the newer
reports first). Avg. (the mean of the task columns, which are averaged already) is left out; Rec.
(relative to its report's first model) is kept only from tables whose first model is --reference
(default native), so that each seed's Rec. is against the native model, as the paper defines it;
"Avg. all" (RULER's mean over lengths) is kept. --models limits and orders the rows.
"""

import argparse
import math
import os
import re
import statistics
import sys

from scipy import stats

from report_tables import tables  # experiments/report_tables.py: the reports' markdown tables

def kept(column, rows, reference):
    """Whether a column of a table goes into the summary: every number column but Avg., and Rec. only
    where the table's first model (what Rec. is relative to) is the reference."""
    if column == "Rec.":
        return bool(rows) and rows[0].get("model") == reference
    return column not in ("model", "Avg.")


def cells(paths, reference="native"):
    """({section: [column, ...]}, {(section, column, model): value}): columns in the order first seen;
    a (section, column, model) keeps the first report's number."""
    columns, values = {}, {}
    for path in paths:
        for title, rows in tables(path, "seed_table").items():
            section = title.split(" (")[0]
            for row in rows:
                model = row.get("model")
                for column, cell in row.items():
                    if model is None or not kept(column, rows, reference):
                        continue
                    try:
                        v = float(cell)
                    except ValueError:
                        continue
                    if not math.isfinite(v):
                        sys.exit(f"seed_table: {path}: {title}: {model}: {column} is {cell}")
                    if column not in columns.setdefault(section, []):
                        columns[section].append(column)
                    values.setdefault((section, column, model), v)
    return columns, values


def seed_of(model):
    """(NAME, k) of a model named NAME_s<k>, (model, 0) otherwise."""
    m = re.fullmatch(r"(.+)_s(\d+)", model)
    return (m.group(1), int(m.group(2))) if m else (model, 0)


def interval(xs):
    """(mean, half-width of the 95 % t-interval; None for one value)."""
    mean = statistics.fmean(xs)
    if len(xs) < 2:
        return mean, None
    return mean, stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))


def summary(columns, values, names):
    """{section: [(NAME, seeds, {column: (mean, half-width or None)}), ...]} in the order of names."""
    out = {}
    for section, cols in columns.items():
        for name in names:
            seeds = {}
            for (s, c, model), v in values.items():
                base, k = seed_of(model)
                if s == section and base == name:
                    seeds.setdefault(c, {})[k] = v
            if seeds:
                n = max(len(v) for v in seeds.values())
                out.setdefault(section, []).append(
                    (name, n, {c: interval(list(seeds[c].values())) for c in cols if seeds.get(c)}))
    return out


def render(columns, summarised):
    """One markdown table per section: NAME, seeds, then each column as mean ± h."""
    out = []
    for section, rows in summarised.items():
        cols = columns[section]
        lines = []
        for name, n, cells_ in rows:
            line = [name, str(n)]
            for c in cols:
                if c not in cells_:
                    line.append("–")
                    continue
                mean, h = cells_[c]
                line.append(f"{mean:.2f}" if h is None else f"{mean:.2f} ± {h:.2f}")
            lines.append("| " + " | ".join(line) + " |")
        out += [f"## {section} (mean ± 95 % t-interval over seeds)", "",
                "| model | seeds | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols), *lines, ""]
    return "\n".join(out)


def plot(columns, summarised, path):
    """PATH.png / PATH.svg: a panel per section, a group of bars per column (one bar a model: the mean,
    with the 95 % interval as an error bar)."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt

    sections = list(summarised)
    # One colour a model in every panel (a section without some model, e.g. RULER without PI x4, must
    # not shift the others' colours), and one legend entry a model.
    names = list(dict.fromkeys(name for rows in summarised.values() for name, _, _ in rows))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colour = {name: palette[i % len(palette)] for i, name in enumerate(names)}
    legend = {}
    fig, axes = plt.subplots(len(sections), 1, figsize=(11, 2.8 * len(sections)), squeeze=False)
    for ax, section in zip(axes[:, 0], sections):
        rows, cols = summarised[section], columns[section]
        width = 0.8 / len(rows)
        for i, (name, n, cells_) in enumerate(rows):
            xs = [j + (i - (len(rows) - 1) / 2) * width for j, c in enumerate(cols) if c in cells_]
            means = [cells_[c][0] for c in cols if c in cells_]
            errs = [cells_[c][1] or 0.0 for c in cols if c in cells_]
            bars = ax.bar(xs, means, width, yerr=errs, capsize=2, color=colour[name])
            legend.setdefault(name, (f"{name} ({n})", bars))
        ax.set_xticks(range(len(cols)), cols)
        ax.set_title(section)
    handles, labels = [bars for _, bars in legend.values()], [label for label, _ in legend.values()]
    axes[0, 0].legend(handles, labels, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0),
                      title="model (seeds)")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{path}.{ext}.tmp", format=ext)
        os.replace(f"{path}.{ext}.tmp", f"{path}.{ext}")
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", help="REPORT.md of linear-ard eval compare")
    ap.add_argument("--models", nargs="*", help="the rows (NAME, seeds joined), in this order")
    ap.add_argument("-o", "--output", help="also write the tables here")
    ap.add_argument("--plot", metavar="PATH", help="also draw them: PATH.png and PATH.svg (bars, 95 %% intervals)")
    ap.add_argument("--reference", default="native",
                    help="Rec. is kept from tables whose first model has this name (default native)")
    args = ap.parse_args()
    columns, values = cells(args.reports, args.reference)
    found = list(dict.fromkeys(seed_of(m)[0] for (_, _, m) in values))
    names = args.models or found
    missing = [n for n in names if n not in found]
    if missing:
        sys.exit(f"seed_table: no model {', '.join(missing)} in the reports (found: {', '.join(found)})")
    summarised = summary(columns, values, names)
    text = render(columns, summarised)
    print(text)
    if args.output:
        with open(args.output + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(args.output + ".tmp", args.output)
    if args.plot:
        plot(columns, summarised, args.plot)


if __name__ == "__main__":
    main()
