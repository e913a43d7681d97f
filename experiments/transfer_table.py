#!/usr/bin/env python3
"""The tables of experiments/transfer.sh: relation KL (arm `ard`) against the next-token loss (arm
`cpt_qkv`) at each budget and scaling, from the runs' own validation.

Reads RUNS/<scaling>_<arm>_b<divisor>_s<seed>/ of one or more RUNS folders (the runs of several
calls; training_summary.json: the kept model's validation; metrics.jsonl: every validation). Prints,
per scaling, the untrained model's KL and passkey (every run's step 0), then one row a budget: each
arm's validation KL to native (mean ± 95 % t-interval over seeds), the paired difference ard −
cpt_qkv over the seeds both arms ran (its interval: a t-interval of the per-seed differences), and
the passkey at the target length; then where the paired difference changes sign (the arms cross),
and, per arm, how well the relation loss tracks the KL to native over every validation of every run
(Pearson and Spearman correlation: the paper's Appendix L). With --plot, KL against tokens per
scaling, both arms.

    experiments/transfer_table.py RUNS [RUNS ...] [--plot FIG.png]
"""
import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from seed_table import interval  # noqa: E402  (the 95 % t-interval of the seed tables)

ARMS = ("ard", "cpt_qkv")
NAME = re.compile(r"(?P<scaling>[a-z0-9]+)_(?P<arm>ard|cpt_qkv)_b(?P<divisor>\d+)_s(?P<seed>\d+)")


def last_length(passkey):
    """The passkey accuracy at the longest length of a {length: accuracy} record, or None."""
    return float(passkey[max(passkey, key=int)]) if passkey else None


def untrained(runs, scaling):
    """The scaled model before training (every run's step-0 validation), the floor a run must beat:
    (mean KL, mean passkey or None), or None when no run recorded its step 0."""
    starts = [r["untrained"] for (s, _), arms in runs.items() if s == scaling
              for a in arms.values() for r in a.values() if r["untrained"][0] is not None]
    if not starts:
        return None
    pk = [p for _, p in starts if p is not None]
    return float(np.mean([k for k, _ in starts])), (float(np.mean(pk)) if pk else None)


def untrained_line(runs, scaling):
    start = untrained(runs, scaling)
    if start is None:
        return []
    kl, pk = start
    return [f"Untrained (step 0 of every run): KL {kl:.3f}" + ("" if pk is None else f", passkey {100 * pk:.0f} %"), ""]


def runs_read(folders):
    """{(scaling, divisor): {arm: {seed: record}}} over the folders in order (a run in two: the later
    folder's), record = the kept validation, tokens and every validation's (relation_loss, val_kl)."""
    runs = defaultdict(lambda: defaultdict(dict))
    for path in (p for folder in folders for p in sorted(folder.glob("*/training_summary.json"))):
        m = NAME.fullmatch(path.parent.name)
        if not m:
            continue
        summary = json.loads(path.read_text())
        chosen = (summary.get("validation") or {}).get("chosen") or {}
        if chosen.get("val_kl") is None:
            continue
        metrics = path.parent / "metrics.jsonl"
        evals = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
        pairs = [(e["relation_loss"], e["val_kl"]) for e in evals
                 if e.get("eval") and e.get("relation_loss") is not None and e.get("val_kl") is not None]
        passkey = chosen.get("passkey") or {}
        start = next((e for e in evals if e.get("eval") and e.get("step") == 0), {})
        runs[(m["scaling"], int(m["divisor"]))][m["arm"]][int(m["seed"])] = {
            "kl": chosen["val_kl"], "tokens": summary.get("tokens_trained", 0),
            "passkey": last_length(passkey), "pairs": pairs,
            "untrained": (start.get("val_kl"), last_length(start.get("passkey") or {}))}
    return runs


def cell(values, digits=3):
    if not values:
        return "–"
    mean, half = interval(values)
    return f"{mean:.{digits}f}" + ("" if half is None else f" ± {half:.{digits}f}")


def paired(arms):
    """The per-seed differences ard − cpt_qkv over the seeds both arms ran."""
    seeds = sorted(set(arms.get("ard", {})) & set(arms.get("cpt_qkv", {})))
    return [arms["ard"][s]["kl"] - arms["cpt_qkv"][s]["kl"] for s in seeds]


def verdict(diffs):
    if len(diffs) < 2:
        return "–"
    mean, half = interval(diffs)
    if mean + half < 0:
        return "ard lower"
    if mean - half > 0:
        return "cpt_qkv lower"
    return "level"


def cell_tokens(arms):
    """A cell's budget: the most tokens any of its runs trained (the arms' step counts round apart)."""
    return max((r["tokens"] for a in arms.values() for r in a.values()), default=0)


def table(runs):
    lines = []
    for scaling in sorted({s for s, _ in runs}):
        lines += [f"### {scaling}", ""] + untrained_line(runs, scaling) + ["| tokens | ard KL | cpt_qkv KL | ard − cpt_qkv (paired) | verdict | seeds | "
                  "passkey ard % | passkey cpt_qkv % |", "|---:|---|---|---|---|---:|---:|---:|"]
        for divisor in sorted((d for s, d in runs if s == scaling), reverse=True):
            arms = runs[(scaling, divisor)]
            tokens = cell_tokens(arms)
            kl = {a: [r["kl"] for r in arms.get(a, {}).values()] for a in ARMS}
            pk = {a: [100 * r["passkey"] for r in arms.get(a, {}).values() if r["passkey"] is not None] for a in ARMS}
            diffs = paired(arms)
            lines.append(f"| {tokens / 1e6:.3g}M | {cell(kl['ard'])} | {cell(kl['cpt_qkv'])} | {cell(diffs)} | "
                         f"{verdict(diffs)} | {len(diffs)} | {cell(pk['ard'], 0)} | {cell(pk['cpt_qkv'], 0)} |")
        lines.append("")
    return lines


def crossings(runs):
    lines = []
    for scaling in sorted({s for s, _ in runs}):
        signs = [(runs[(scaling, d)], d) for d in sorted((d for s, d in runs if s == scaling), reverse=True)]
        means = [(np.mean(paired(a)), d, verdict(paired(a))) for a, d in signs if paired(a)]
        cross = [f"between 1/{d0} and 1/{d1} of the budget ({v0} → {v1})"
                 for (m0, d0, v0), (m1, d1, v1) in zip(means, means[1:]) if np.sign(m0) != np.sign(m1)]
        lines.append(f"- {scaling}: " + ("; ".join(cross) if cross else "the arms do not cross (paired means of one sign)"))
    return lines


def ranks(x):
    order = np.argsort(x)
    r = np.empty(len(x))
    r[order] = np.arange(len(x))
    return r


def spearman(pairs):
    x, y = np.array(pairs).T
    return np.corrcoef(ranks(x), ranks(y))[0, 1]


def tracking(runs):
    """Per arm: Pearson and Spearman correlation of relation loss and val KL over every validation
    (pooled: runs of every scaling and budget), then within each run of 3 validations or more (the
    median of the runs' Spearman correlations: whether the loss tracks the KL as one run trains)."""
    lines = []
    for arm in ARMS:
        records = [r for arms in runs.values() for r in arms.get(arm, {}).values()]
        pairs = [p for r in records for p in r["pairs"]]
        if len(pairs) < 3:
            continue
        x, y = np.array(pairs).T
        line = (f"- {arm}: {len(pairs)} validations, Pearson {np.corrcoef(x, y)[0, 1]:.3f}, "
                f"Spearman {spearman(pairs):.3f}")
        within = [spearman(r["pairs"]) for r in records if len(r["pairs"]) >= 3]
        if within:
            line += (f"; within a run: median Spearman {np.median(within):.3f} over {len(within)} runs "
                     f"({min(within):.3f} to {max(within):.3f})")
        lines.append(line)
    return lines


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    scalings = sorted({s for s, _ in runs})
    fig, axes = plt.subplots(1, len(scalings), figsize=(4.5 * len(scalings), 3.6), squeeze=False)
    labels = {"ard": "LinearARD (ard)", "cpt_qkv": "CPT of Q/K/V (cpt_qkv)"}
    for ax, scaling in zip(axes[0], scalings):
        ticks = set()
        for arm, color in zip(ARMS, ("tab:red", "tab:blue")):
            points = []
            for d in sorted(d for s, d in runs if s == scaling):
                records = list(runs[(scaling, d)].get(arm, {}).values())
                if records:
                    mean, half = interval([r["kl"] for r in records])
                    points.append((cell_tokens(runs[(scaling, d)]) / 1e6, mean, half or 0.0))
            if points:
                x, y, h = np.array(sorted(points)).T
                ax.errorbar(x, y, yerr=h, marker="o", capsize=3, color=color, label=labels[arm])
                ticks.update(x)
        start = untrained(runs, scaling)
        if start is not None:
            ax.axhline(start[0], color="gray", linestyle="--", linewidth=1, label="untrained")
        ax.set_xscale("log")
        ax.set_xticks(sorted(ticks), [f"{t:.2g}" for t in sorted(ticks)])
        ax.minorticks_off()
        ax.set_title(scaling)
        ax.set_xlabel("training tokens (M)")
        ax.set_ylabel("validation KL to native")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", type=Path, nargs="+", help="folders of runs (a run found in two: the later folder's)")
    p.add_argument("--plot", type=Path)
    args = p.parse_args()
    runs = runs_read(args.runs)
    if not runs:
        sys.exit(f"transfer_table: no finished run under {' '.join(map(str, args.runs))}")
    print("\n".join(table(runs) + ["Where the arms cross (sign of the paired mean; each side's verdict in brackets):"] + crossings(runs) + [""]
                    + ["Relation loss against KL to native over the validations:"] + tracking(runs)))
    if args.plot:
        plot(runs, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
