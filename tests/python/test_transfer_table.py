"""experiments/transfer_table.py: the relation-KL-against-next-token-loss tables, on constructed run
folders with fresh random figures: each arm's mean and the paired difference's 95 % t-interval
against scipy's, the verdict, the untrained model's KL (every run's step 0), where the arms cross,
the relation loss's correlation with the KL to native against scipy's Pearson and Spearman (pooled,
and the median within a run), a run without its pair left out of the pairs, runs read from two
folders, and the plot."""
import json
import random
import re
import statistics
import sys
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_tool import script_run  # noqa: E402


def run_folder(root, name, kl, passkey, pairs, tokens):
    folder = root / name
    folder.mkdir(parents=True)
    chosen = {"val_kl": kl, "passkey": {"32768": passkey}}
    (folder / "training_summary.json").write_text(json.dumps(
        {"validation": {"chosen": chosen}, "tokens_trained": tokens}))
    (folder / "metrics.jsonl").write_text("".join(
        json.dumps({"eval": True, "step": 10 * i, "relation_loss": r, "val_kl": k,
                    "passkey": {"32768": 0.25 if i == 0 else passkey}}) + "\n" for i, (r, k) in enumerate(pairs))
        + json.dumps({"step": 1, "loss": 3.0}) + "\n")


def t_cell(values):
    mean = statistics.fmean(values)
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return f"{mean:.3f} ± {half:.3f}"


def test_tables_against_scipy(tmp_path):
    rng = random.Random()
    kl = {}
    all_pairs = {"ard": [], "cpt_qkv": []}
    run_pairs = {"ard": [], "cpt_qkv": []}
    # ard below cpt_qkv at the small budget (divisor 16) and above it at the full one: one crossing.
    # A seed's two arms share its level (the pairing) and differ by the shift within +-0.02, so the
    # paired interval (at most t(2) * 0.023 / sqrt(3) = 0.06 wide each side) never reaches zero.
    for d, shift in ((16, -0.2), (1, 0.2)):
        for seed in range(3):
            level = rng.uniform(0.3, 0.4)
            for arm in ("ard", "cpt_qkv"):
                value = level + (shift + rng.uniform(-0.02, 0.02) if arm == "ard" else 0.0)
                kl[(d, arm, seed)] = value
                pairs = [(rng.uniform(1, 5), rng.uniform(0.1, 2)) for _ in range(4)]
                all_pairs[arm] += pairs
                run_pairs[arm].append(pairs)
                # Seed 2 comes from a second call's folder: the table reads both.
                run_folder(tmp_path / ("b" if seed == 2 else "a"), f"pi4_{arm}_b{d}_s{seed}", value,
                           rng.choice([0.5, 0.75]), pairs, 4259840 // d)
    run_folder(tmp_path / "a", "pi4_ard_b1_s7", 9.0, 0.0, [], 4259840)  # no cpt_qkv seed 7: not a pair
    plot = tmp_path / "transfer.png"
    r = script_run("experiments/transfer_table.py", tmp_path / "a", tmp_path / "b", "--plot", plot)
    assert r.returncode == 0, r.stderr
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| (\d+\.\d+)M \|.*$", r.stdout, re.M)}
    for d, verdict in ((16, "ard lower"), (1, "cpt_qkv lower")):
        row = rows[f"{4259840 // d / 1e6:.3g}"]
        diffs = [kl[(d, "ard", s)] - kl[(d, "cpt_qkv", s)] for s in range(3)]
        assert f"| {t_cell(diffs)} | {verdict} | 3 |" in row, row
        assert t_cell([kl[(d, "cpt_qkv", s)] for s in range(3)]) in row, row
    assert "between 1/16 and 1/1 of the budget (ard lower → cpt_qkv lower)" in r.stdout
    for arm, pairs in all_pairs.items():
        x, y = zip(*pairs)
        assert (f"- {arm}: {len(pairs)} validations, Pearson {stats.pearsonr(x, y)[0]:.3f}, "
                f"Spearman {stats.spearmanr(x, y)[0]:.3f}; within a run: median Spearman "
                f"{statistics.median(stats.spearmanr(*zip(*p))[0] for p in run_pairs[arm]):.3f} over 6 runs") in r.stdout
    untrained = statistics.fmean(p[0][1] for arm in run_pairs.values() for p in arm)
    assert f"Untrained (step 0 of every run): KL {untrained:.3f}, passkey 25 %" in r.stdout
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_runs_is_an_error(tmp_path):
    r = script_run("experiments/transfer_table.py", tmp_path)
    assert r.returncode == 1 and "no finished run" in r.stderr
