"""experiments/sweep_table.py: the table of a settings sweep read from each run's training_summary.json,
and the arm the restore's own `kl_passkey` rule keeps, on constructed summaries with fresh random
figures: the kept arm recomputed here from the rule's definition, a missing run listed as missing, and
the trade-off plot written as a PNG."""
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_tool import script_run  # noqa: E402


def summary(kl, passkey):
    """A training_summary.json as restore writes it, with one chosen validation record."""
    lengths = {"4096": passkey[0], "8192": passkey[1]}
    chosen = {"stage": 2, "step": 130, "val_kl": kl, "val_ppl": 30.0, "native_ppl": 26.0,
              "passkey": lengths, "passkey_mean": sum(passkey) / 2}
    return {"validation": {"chosen": chosen, "chosen_step": 130}, "tokens_trained": 4259840}


def expected(arms, margin):
    best = max(sum(p) / 2 for _, p in arms.values())
    eligible = [n for n, (_, p) in arms.items() if sum(p) / 2 >= best - margin]
    return min(eligible, key=lambda n: arms[n][0])


def test_kept_arm_follows_the_kl_passkey_rule(tmp_path):
    rng = random.Random()
    for trial in range(5):
        runs = tmp_path / f"runs{trial}"
        arms = {f"arm{i}": (rng.uniform(0.2, 0.8), (rng.randint(0, 20) / 20, rng.randint(0, 20) / 20))
                for i in range(6)}
        for name, (kl, passkey) in arms.items():
            (runs / name).mkdir(parents=True)
            (runs / name / "training_summary.json").write_text(json.dumps(summary(kl, passkey)))
        margin = rng.choice([0.0, 0.1, 0.25])
        plot = tmp_path / f"sweep{trial}.png"
        r = script_run("experiments/sweep_table.py", runs, *arms, "missing_arm", "--margin", margin, "--plot", plot)
        assert r.returncode == 0, r.stderr
        assert f"kept by select kl_passkey (margin {margin}): {expected(arms, margin)}" in r.stdout
        assert "| missing_arm | missing" in r.stdout
        for name, (kl, _) in arms.items():
            assert f"| {name} | {kl:.3f} |" in r.stdout
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
