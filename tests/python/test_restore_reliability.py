"""Reliability of `linear-ard restore` (docs/reliability.md): what a demanding user throws at the trainer.

Malformed or suspicious configs (a key given twice, a misspelt rope key, factor < 1, a context too
short to train on, warmup longer than the run), bad teachers (already RoPE-scaled, NaN weights), a
run that diverges, two runs on one output folder, leftovers of a kill, and resuming a run stopped at
its last step. Each case checks the outcome a user relies on: a clean error naming the problem and
nothing half-written where they would load it, or a warning on stderr where the input is legal.
docs/reliability.md lists the cases.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_restore_reliability.py
"""

import fcntl
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_restore import restore  # noqa: E402
from test_restore_options import setup  # noqa: E402,F401  (the tiny teacher and its config)

CTX = 32  # the native length of test_restore_options' tiny teacher (PI x4 student)


def metrics(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def fails_cleanly(r, out, *messages):
    assert r.returncode != 0, r.stdout + r.stderr
    for m in messages:
        assert m in r.stderr, r.stderr
    assert not (out / "model").exists()


# ---- config


def test_duplicated_key_is_an_error_naming_it_and_its_lines(setup, tmp_path):
    root, teacher, config = setup[:3]
    text = config.read_text() + "steps: 5\n"
    bad = tmp_path / "dup.yaml"
    bad.write_text(text)
    lines = text.splitlines()
    first = next(i for i, l in enumerate(lines) if l.startswith("steps:")) + 1
    out = tmp_path / "out"
    r = restore(bad, f"output={out}")
    fails_cleanly(r, out, "key 'steps' is given twice", f"line {len(lines)}", f"first at line {first}")
    assert not out.exists()


def test_duplicated_nested_key_is_an_error(setup, tmp_path):
    root, teacher, config = setup[:3]
    bad = tmp_path / "dup_nested.yaml"
    bad.write_text(config.read_text() + "stage2:\n  steps: 1\n  steps: 2\n")
    r = restore(bad, f"output={tmp_path / 'out'}")
    fails_cleanly(r, tmp_path / "out", "key 'stage2.steps' is given twice")


def test_misspelt_rope_key_is_an_error_naming_it(setup, tmp_path):
    config = setup[2]
    out = tmp_path / "out"
    r = restore(config, f"output={out}", "student_rope.fctor=2")
    fails_cleanly(r, out, "unknown config key 'student_rope.fctor'", "factor")
    assert not out.exists()
    # Without a rope_type the key is still named, against every type's keys.
    r = restore(config, f"output={out}", "student_rope={fctor: 2}")
    fails_cleanly(r, out, "unknown config key 'student_rope.fctor'")
    # A key of another rope type is misplaced too: beta_fast is yarn's.
    r = restore(config, f"output={out}", "student_rope.beta_fast=32")
    fails_cleanly(r, out, "unknown config key 'student_rope.beta_fast'")


@pytest.mark.parametrize("factor", ["0.5", "0", "-2"])
def test_factor_below_one_is_an_error(setup, tmp_path, factor):
    config = setup[2]
    out = tmp_path / "out"
    r = restore(config, f"output={out}", f"student_rope.factor={factor}")
    fails_cleanly(r, out, "config key 'student_rope.factor'", ">= 1")
    assert not out.exists()


def test_ctx_len_with_nothing_to_train_is_an_error(setup, tmp_path):
    config = setup[2]
    out = tmp_path / "out"
    r = restore(config, f"output={out}", "ctx_len=1")
    fails_cleanly(r, out, "config key 'ctx_len' (1)")
    assert not out.exists()


def test_small_ctx_len_and_long_warmup_warn(setup, tmp_path):
    config = setup[2]
    out = tmp_path / "out"
    r = restore(config, f"output={out}", "ctx_len=4", "steps=2", "warmup_steps=5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning: config key 'ctx_len' (4)" in r.stderr, r.stderr
    assert "warning: config key 'warmup_steps' (5)" in r.stderr, r.stderr
    assert (out / "model" / "config.json").is_file()


def test_hf_style_aliases(setup, tmp_path):
    config = setup[2]
    out = tmp_path / "out"
    r = restore(config, f"output_dir={out}", "learning_rate=5e-4", "gradient_accumulation_steps=2", "steps=1")
    assert r.returncode == 0, r.stdout + r.stderr
    resolved = yaml.safe_load((out / "resolved_config.yaml").read_text())
    assert resolved["output"] == str(out) and resolved["lr"] == 5e-4 and resolved["grad_accum"] == 2
    c = yaml.safe_load(config.read_text())
    c["learning_rate"] = 1e-4
    both = tmp_path / "both.yaml"
    both.write_text(yaml.safe_dump(c))
    r = restore(both, f"output={tmp_path / 'out2'}")
    fails_cleanly(r, tmp_path / "out2", "'lr'", "'learning_rate'", "two spellings of config key 'lr'")
    r = restore(config, f"output={tmp_path / 'out3'}", "lr=1", "learning_rate=2")
    fails_cleanly(r, tmp_path / "out3", "two spellings of config key 'lr'")


# ---- teachers


def test_teacher_already_rope_scaled_is_refused(setup, tmp_path):
    root, teacher, config = setup[:3]
    scaled = tmp_path / "scaled"
    shutil.copytree(teacher, scaled)
    cfg = json.loads((scaled / "config.json").read_text())
    cfg.pop("rope_parameters", None)
    cfg["rope_scaling"] = {"rope_type": "linear", "factor": 4.0}
    cfg["max_position_embeddings"] = CTX * 4
    (scaled / "config.json").write_text(json.dumps(cfg))
    out = tmp_path / "out"
    r = restore(config, f"output={out}", f"teacher={scaled}")
    fails_cleanly(r, out, f"teacher {scaled}", "already RoPE-scaled", "linear")
    assert not out.exists()


def test_teacher_with_nan_weights_is_refused_naming_the_tensor(setup, tmp_path):
    root, teacher, config = setup[:3]
    bad = tmp_path / "nan_teacher"
    shutil.copytree(teacher, bad)
    tensors = load_file(str(bad / "model.safetensors"))
    name = "model.layers.0.mlp.up_proj.weight"  # outside the loss path of final-layer ARD
    tensors[name][3, 5] = float("nan")
    tensors["model.norm.weight"][0] = float("inf")
    save_file(tensors, str(bad / "model.safetensors"), metadata={"format": "pt"})
    out = tmp_path / "out"
    r = restore(config, f"output={out}", f"teacher={bad}")
    fails_cleanly(r, out, name, "NaN")
    assert not out.exists()


# ---- runs


def test_divergence_stops_before_the_model_and_keeps_the_last_good_checkpoint(setup, tmp_path):
    config = setup[2]
    out = tmp_path / "out"
    # Measured on this teacher: the loss climbs 0.28, 0.75, 0.94, 2.6, 2.4, 4.7, ... to 87 at step 20
    # (lr 1 reached over a 20-step warmup, no clipping): step 6 passes 10x the first loss.
    unstable = ("lr=1", "warmup_steps=20", "clip_grad_norm=0", "steps=20", "checkpoint_every=1")
    r = restore(config, f"output={out}", *unstable, "divergence_factor=10")
    fails_cleanly(r, out, "diverged")
    assert not (out / "training_summary.json").exists()
    steps = [m for m in metrics(out) if not m.get("eval")]
    kept = sorted(out.glob("checkpoint-*"))
    assert len(kept) == 1, kept
    good = int(kept[0].name.split("-")[1])
    # The checkpoint kept is one whose next step's loss was still within the rule.
    assert steps[good]["loss"] <= 10 * steps[0]["loss"] and all(m["loss"] == m["loss"] for m in steps[:good + 1])
    assert "checkpoint-%d" % good in r.stderr, r.stderr
    assert len(steps) == good + 2  # the step that diverged is recorded, nothing after it
    # The rule is the user's: off, the same run trains to its end.
    r = restore(config, f"output={tmp_path / 'off'}", *unstable, "divergence_factor=0")
    assert r.returncode == 0, r.stdout + r.stderr


def test_two_runs_on_one_output_folder_exclude_each_other(setup, tmp_path):
    config = setup[2]
    out = tmp_path / "out"
    out.mkdir()
    with open(out / "run.lock", "w") as lock:  # what a running linear-ard holds
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("4242\n")
        lock.flush()
        r = restore(config, f"output={out}", "overwrite=true")
        fails_cleanly(r, out, f"output {out} is in use by another run (pid 4242")
        r = restore(config, f"output={out}", "resume=true")
        fails_cleanly(r, out, "pid 4242")
    assert [p.name for p in out.iterdir()] == ["run.lock"]
    r = restore(config, f"output={out}", "steps=1")
    assert r.returncode == 0, r.stdout + r.stderr


def test_leftovers_of_a_killed_final_write_are_removed_on_resume(setup, tmp_path):
    config = setup[2]
    out = tmp_path / "out"
    r = restore(config, f"output={out}", "stop_after_step=2")
    assert r.returncode == 0, r.stdout + r.stderr
    (out / "model.tmp.99999").mkdir()
    (out / "model.tmp.99999" / "config.json").write_text("{}")
    (out / "training_summary.json.tmp.99999").write_text("{")
    r = restore(config, f"output={out}", "resume=true")
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in out.iterdir() if ".tmp" in p.name) == []
    assert (out / "model" / "config.json").is_file()


def test_resume_at_the_last_step_keeps_its_final_evaluation(setup, tmp_path):
    config = setup[2]
    out = tmp_path / "out"
    r = restore(config, f"output={out}", "stop_after_step=3")
    assert r.returncode == 0, r.stdout + r.stderr
    final = [m for m in metrics(out) if m.get("eval")][-1]
    assert final["step"] == 3
    r = restore(config, f"output={out}", "resume=true")
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((out / "training_summary.json").read_text())
    assert summary["eval_after"] == final
    assert summary["eval_before"]["step"] == 0
    assert f"{final['relation_loss']:.4f}" in r.stdout.split("restore: relation loss")[1].split(",")[0].split("->")[1]
