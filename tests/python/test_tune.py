"""`linear-ard tune`: short restore trials over a grid, the winner by the runs' own validation, then
the winner's full run. The choice is checked against a recomputation from each trial's
metrics.jsonl (the lowest validation KL, select.criterion kl), not against tune's own arithmetic;
a rerun resumes (nothing trains again); bad grids are refused before anything is written. With
--budget, the tokens each run trained are checked against the steps recomputed here from the
config's lengths, batch sizes and steps; bad budgets are refused before anything is written.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_tune.py
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_restore import binary  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "models" / "demo"
CTX = 64
STEPS = 6
GRID = ("--grid", "lr=1e-4,3e-3", "--grid", "trainable=qkv,lora_qkv")


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    """The demo model (a small trained LLaMA) scaled PI x8: the KL to native is large enough that
    the trials' settings tell apart. select.criterion last: each trial keeps its last validation
    (tune then compares the trials by kl_passkey, here the lowest KL since there is no passkey)."""
    root = tmp_path_factory.mktemp("tune")
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump({
        "teacher": str(DEMO), "student_rope": {"rope_type": "linear", "factor": 8},
        "data": [str(ROOT / "data" / "demo" / "restore.jsonl")], "ctx_len": CTX, "steps": STEPS, "warmup_steps": 2,
        "eval_every": 2, "val_blocks": 2, "val_ctx_len": 128, "val_passkey": {"samples": 0},
        "select": {"criterion": "last"}, "lora": {"rank": 8}, "device": "cpu", "dtype": "fp32",
        "tensorboard": False, "log_every": 100}))
    return root, path


def tune(config, *args, env=None):
    return subprocess.run([str(binary()), "tune", str(config), *args], capture_output=True, text=True, timeout=600,
                          env=None if env is None else {**os.environ, **env})


def evals(folder):
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if json.loads(line).get("eval")]


@pytest.fixture(scope="module")
def tuned(config):
    root, path = config
    out = root / "out"
    r = tune(path, f"output={out}", *GRID, "--trial-fraction", "0.5")
    assert r.returncode == 0, r.stdout + r.stderr
    return out, r


def test_the_winner_has_the_lowest_validation_kl_and_runs_in_full(tuned):
    out, r = tuned
    t = json.loads((out / "tune.json").read_text())
    names = [f"trial-{i:02d}" for i in range(4)]
    assert [x["name"] for x in t["trials"]] == names
    assert [x["settings"] for x in t["trials"]] == [
        ["lr=1e-4", "trainable=qkv"], ["lr=1e-4", "trainable=lora_qkv"],
        ["lr=3e-3", "trainable=qkv"], ["lr=3e-3", "trainable=lora_qkv"]]
    best = {}
    for name in names:
        folder = out / "trials" / name
        records = evals(folder)
        # Half the steps and half the interval: validations at 0, 1, 2, 3.
        assert [e["step"] for e in records] == [0, 1, 2, 3]
        best[name] = records[-1]["val_kl"]
        resolved = yaml.safe_load((folder / "resolved_config.yaml").read_text())
        assert resolved["steps"] == STEPS // 2
    winner = min(names, key=lambda n: (best[n], names.index(n)))
    assert t["trials"][t["winner"]]["name"] == winner
    assert t["trials"][t["winner"]]["chosen"]["val_kl"] == best[winner]
    # The trials differ: the choice is not a tie broken by order.
    assert len({round(v, 9) for v in best.values()}) == 4
    settings = t["trials"][t["winner"]]["settings"]
    resolved = yaml.safe_load((out / "restored" / "resolved_config.yaml").read_text())
    assert resolved["steps"] == STEPS
    for s in settings:
        key, value = s.split("=")
        assert resolved[key] == (float(value) if key == "lr" else value), (key, resolved[key])
    assert (out / "restored" / "model" / "model.safetensors").exists()
    summary = json.loads((out / "restored" / "training_summary.json").read_text())
    assert t["final"]["tokens"] == summary["tokens_trained"] == STEPS * CTX
    assert sum(x["tokens"] for x in t["trials"]) == 4 * (STEPS // 2) * CTX
    md = (out / "tune.md").read_text()
    assert f"**Winner: {winner}**" in md and all(f"`{s}`" in md for s in settings)
    assert f"**Winner: {winner}**" in r.stdout


def test_a_rerun_resumes_without_training_again(config, tuned):
    _, path = config
    out, _ = tuned
    winner = json.loads((out / "tune.json").read_text())["winner"]
    before = {p: p.stat().st_mtime_ns for p in out.glob("*/*/metrics.jsonl")}
    before[out / "restored" / "metrics.jsonl"] = (out / "restored" / "metrics.jsonl").stat().st_mtime_ns
    r = tune(path, f"output={out}", *GRID, "--trial-fraction", "0.5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(before) == 5 and {p: p.stat().st_mtime_ns for p in before} == before
    assert "restore:" not in r.stdout  # no run started
    assert json.loads((out / "tune.json").read_text())["winner"] == winner


def test_a_grid_that_never_beats_the_unrestored_model_says_so(config):
    """select kl keeps each trial's lowest validation; on this model a few steps of relation
    distillation raise the KL to native, so every trial keeps step 0 and the report says the choice
    is a tie."""
    root, path = config
    out = root / "step0"
    r = tune(path, f"output={out}", "select.criterion=kl", "--grid", "lr=1e-4,3e-3", "--trial-fraction", "0.5",
             "--no-final")
    assert r.returncode == 0, r.stdout + r.stderr
    t = json.loads((out / "tune.json").read_text())
    steps = [x["chosen"]["step"] for x in t["trials"]]
    assert steps == [0, 0] and "final" not in t and not (out / "restored").exists()
    assert all(min(e["val_kl"] for e in evals(out / "trials" / x["name"])) == evals(out / "trials" / x["name"])[0]["val_kl"]
               for x in t["trials"])
    assert "no trial lowered the validation KL" in (out / "tune.md").read_text()


def test_another_plan_in_the_same_output_is_refused(config, tuned):
    _, path = config
    out, _ = tuned
    r = tune(path, f"output={out}", "--grid", "lr=1e-3")
    assert r.returncode == 1
    assert "tune.json" in r.stderr and "overwrite=true" in r.stderr, r.stderr


def test_linked_keys_take_one_value_together(config, tmp_path):
    """--grid lr,stage2.lr=A,B: two trials, each with both learning rates at its value (read back from
    the trial's resolved config)."""
    _, path = config
    out = tmp_path / "out"
    r = tune(path, f"output={out}", "--grid", "lr,stage2.lr=2e-4,3e-3", "--trial-fraction", "0.34", "--no-final")
    assert r.returncode == 0, r.stdout + r.stderr
    for i, value in enumerate((2e-4, 3e-3)):
        resolved = yaml.safe_load((out / "trials" / f"trial-{i:02d}" / "resolved_config.yaml").read_text())
        assert float(resolved["lr"]) == value and float(resolved["stage2"]["lr"]) == value, resolved
    assert not (out / "trials" / "trial-02").exists()


@pytest.mark.parametrize("grid,message", [
    ("steps=2,4", "key 'steps' is set by tune itself"),
    ("lr", "expected KEY=V1,V2"),
    ("lr=1e-3,", "an empty value"),
    ("no_such_key=1,2", "unknown config key 'no_such_key'"),
    ("lr,steps=1e-3,3e-3", "key 'steps' is set by tune itself"),
    ("lr,=1e-3", "an empty key"),
    ("lr,lr=1e-3", "key 'lr' is given twice"),
])
def test_a_bad_grid_is_refused_before_anything_is_written(config, tmp_path, grid, message):
    _, path = config
    out = tmp_path / "out"
    r = tune(path, f"output={out}", "--grid", grid)
    assert r.returncode in (1, 2), r.stdout + r.stderr
    assert message in r.stderr, r.stderr
    assert not out.exists()


# --budget: two configs whose stages train different tokens per step. A two-stage LinearARD run
# (stage 1: 32 x 2 tokens a step, stage 2: 96 x 1 x 2) and a CPT baseline without stage 2 (40 x 1 x 2).
BUDGET_CONFIGS = {
    "ard_two_stages": ({"ctx_len": 32, "batch_size": 2, "steps": 6, "warmup_steps": 2,
                        "stage2": {"steps": 2, "ctx_len": 96, "batch_size": 1, "grad_accum": 2, "lr": 1e-4,
                                   "warmup_steps": 1}}, "1.5K", 1500, "lr=1e-4,3e-3"),
    "cpt_one_stage": ({"method": "cpt", "ctx_len": 40, "grad_accum": 2, "steps": 5, "warmup_steps": 1,
                       "stage2": {"steps": 0}}, "0.00095M", 950, "lr=1e-4"),
}
NO_PLOT = {"LINEAR_ARD_NO_PLOT": "1"}  # the plots' Python start-ups would take most of the time
FRACTION = 0.4


def budget_config(root, name, changes):
    cfg = yaml.safe_load((root / "config.yaml").read_text())
    cfg.update(changes)
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return cfg, path


def per_step(cfg):
    """Tokens of one step of each stage: ctx_len x batch_size x grad_accum (defaults 1)."""
    s2 = cfg.get("stage2", {})
    return (cfg["ctx_len"] * cfg.get("batch_size", 1) * cfg.get("grad_accum", 1),
            s2.get("ctx_len", 0) * s2.get("batch_size", 1) * s2.get("grad_accum", 1))


def steps_times(steps, f):
    """Each stage's steps times f, rounded to the nearest (halves up), at least 1 for a stage that has steps."""
    return tuple(max(1, math.floor(n * f + 0.5)) if n > 0 else 0 for n in steps)


def tokens_trained(folder):
    return json.loads((folder / "training_summary.json").read_text())["tokens_trained"]


@pytest.mark.parametrize("name", sorted(BUDGET_CONFIGS))
def test_a_budget_scales_the_full_run_and_the_trials_to_its_tokens(config, tmp_path, name):
    root, _ = config
    changes, text, budget, grid = BUDGET_CONFIGS[name]
    n = len(grid.split(","))
    cfg, path = budget_config(root, name, changes)
    per = per_step(cfg)
    steps = (cfg["steps"], cfg["stage2"]["steps"])
    full_steps = steps_times(steps, budget / sum(p * n for p, n in zip(per, steps)))
    trial_steps = steps_times(full_steps, FRACTION)
    full = sum(p * n for p, n in zip(per, full_steps))
    trial = sum(p * n for p, n in zip(per, trial_steps))
    assert full_steps != steps and abs(full - budget) <= sum(per) / 2  # about the budget, to a rounding

    out = tmp_path / "out"
    r = tune(path, f"output={out}", "--grid", grid, "--trial-fraction", str(FRACTION), "--budget", text, env=NO_PLOT)
    assert r.returncode == 0, r.stdout + r.stderr
    for i in range(n):
        folder = out / "trials" / f"trial-{i:02d}"
        resolved = yaml.safe_load((folder / "resolved_config.yaml").read_text())
        assert (resolved["steps"], resolved["stage2"]["steps"]) == trial_steps
        assert tokens_trained(folder) == trial
    resolved = yaml.safe_load((out / "restored" / "resolved_config.yaml").read_text())
    assert (resolved["steps"], resolved["stage2"]["steps"]) == full_steps
    assert tokens_trained(out / "restored") == full
    t = json.loads((out / "tune.json").read_text())
    assert t["plan"]["budget"] == budget
    assert t["budget"] == {"asked": budget, "full_run_tokens": [full] * n, "trial_tokens": [trial] * n,
                           "trial_tokens_total": n * trial}
    assert t["trial_tokens"] == n * trial and t["final"]["tokens"] == full
    md = (out / "tune.md").read_text()
    assert (f"Budget: {budget} tokens asked for the full run (`--budget`); planned after rounding each stage's "
            f"steps: {full} tokens for the full run, {trial} for each trial, {n * trial} for the {n} trials.") in md

    # Another budget is another plan: refused in the same output.
    r = tune(path, f"output={out}", "--grid", grid, "--trial-fraction", str(FRACTION), "--budget", str(budget + 1))
    assert r.returncode == 1 and "tune.json" in r.stderr, r.stderr


@pytest.mark.parametrize("text", ["0", "-5", "4.2X", "abc", "1.5", "0.0001K", "", "10000000000G"])
def test_a_bad_budget_is_refused_with_one_line_before_anything_is_written(config, tmp_path, text):
    _, path = config
    out = tmp_path / "out"
    r = tune(path, f"output={out}", "--grid", "lr=1e-4,3e-3", "--budget", text)
    assert r.returncode > 0, r.stdout + r.stderr  # < 0: killed by a signal (an abort)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--budget" in lines[0] and f"'{text}'" in lines[0], r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert not out.exists()
