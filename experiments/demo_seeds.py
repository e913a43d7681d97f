#!/usr/bin/env python3
"""The main job's figures over seeds: reads the output folders of several `scripts/demo.sh` runs
(one a seed: DEMO_SEED=k DEMO_OUT=...), each with its `eval/compare.json`, and prints per model the
mean and the two-sided 95 % Student-t interval (n - 1 degrees of freedom) of the KL to native,
perplexity and passkey accuracy at each length, then each seed's row (so that "no seed below" can
be read). Optionally writes the table (-o) and a plot (--plot: KL and passkey by length, one marker
a seed).

    experiments/demo_seeds.py OUT_SEED0 OUT_SEED1 ... [-o TABLE.md] [--plot FIGURE.png]
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from demo_report import passkey_by_length  # noqa: E402  (the demo's own reading of a passkey table)


def seed_rows(out):
    """{model name: {"kl": x, "ppl": x, "passkey": {length: %}}} of one demo run's compare.json."""
    report = json.loads((Path(out) / "eval" / "compare.json").read_text())
    rows = {}
    for m in report["models"]:
        ppl = m["ppl"][0]
        rows[m["name"]] = {"kl": ppl.get("kl", 0.0), "ppl": ppl["ppl"], "passkey": passkey_by_length(m["passkey"])[0]}
    return rows


def interval(values):
    """'mean ± h' (h the 95 % t half-width), or the value alone for one seed."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:.3g}"
    h = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return f"{mean:.3g} ± {h:.2g}"


def table(runs):
    """The markdown lines: one row a model (mean ± interval), then one row a model and seed."""
    models = list(runs[0])
    lengths = sorted({n for r in runs for m in r.values() for n in m["passkey"]})
    head = "| model | KL to native | PPL | " + " | ".join(f"passkey {n // 1024}K %" for n in lengths) + " |"
    lines = [head, "|---" * (3 + len(lengths)) + "|"]
    for name in models:
        cols = [interval([r[name]["kl"] for r in runs]), interval([r[name]["ppl"] for r in runs])]
        cols += [interval([r[name]["passkey"][n] for r in runs]) for n in lengths]
        lines.append(f"| {name} ({len(runs)} seeds) | " + " | ".join(cols) + " |")
    for name in models:
        for k, r in enumerate(runs):
            cols = [f"{r[name]['kl']:.3f}", f"{r[name]['ppl']:.2f}"] + [f"{r[name]['passkey'][n]:.0f}" for n in lengths]
            lines.append(f"| {name}, run {k} | " + " | ".join(cols) + " |")
    return lines, lengths


def plot(runs, lengths, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.5))
    for i, name in enumerate(runs[0]):
        a.scatter([i] * len(runs), [r[name]["kl"] for r in runs])
        b.plot([n // 1024 for n in lengths], [statistics.fmean(r[name]["passkey"][n] for r in runs) for n in lengths],
               marker="o", label=name)
    a.set_xticks(range(len(runs[0])), list(runs[0]))
    a.set_ylabel("KL to native (nats a token)")
    b.set_xlabel("passkey length (K tokens)")
    b.set_ylabel("passkey accuracy % (mean over seeds)")
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outs", nargs="+", help="scripts/demo.sh output folders, one a seed")
    parser.add_argument("-o", "--output", type=Path, help="write the table there too")
    parser.add_argument("--plot", type=Path, help="write a figure (png/svg) there")
    args = parser.parse_args()
    try:
        runs = [seed_rows(o) for o in args.outs]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"demo_seeds: cannot read a run's eval/compare.json: {e}")
    lines, lengths = table(runs)
    print("\n".join(lines))
    if args.output:
        args.output.write_text("\n".join(lines) + "\n")
    if args.plot:
        plot(runs, lengths, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
