"""Reliability of `linear-ard restore` (docs/reliability.md): what a demanding user throws at the trainer.

Malformed or suspicious configs (a key given twice, a misspelt rope key, factor < 1, a context too
short to train on, warmup longer than the run), teachers (one already RoPE-scaled, extended; NaN weights refused), a
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


def test_teacher_already_rope_scaled_is_extended(setup, tmp_path):
    """A PI x4 teacher asked for linear x2: the student is linear x8 over the teacher's 4 x CTX
    positions doubled (docs/rope.md); dynamic NTK over it has no rope dict and is refused."""
    root, teacher, config = setup[:3]
    scaled = tmp_path / "scaled"
    shutil.copytree(teacher, scaled)
    cfg = json.loads((scaled / "config.json").read_text())
    cfg.pop("rope_parameters", None)
    cfg["rope_scaling"] = {"rope_type": "linear", "factor": 4.0}
    cfg["max_position_embeddings"] = CTX * 4
    (scaled / "config.json").write_text(json.dumps(cfg))
    out = tmp_path / "out"
    r = restore(config, f"output={out}", f"teacher={scaled}", "student_rope.factor=2", "steps=1")
    assert r.returncode == 0, r.stdout + r.stderr
    written = json.loads((out / "model" / "config.json").read_text())
    assert written["rope_scaling"] == {"rope_type": "linear", "factor": 8.0}
    assert written["max_position_embeddings"] == CTX * 8
    out = tmp_path / "out2"
    r = restore(config, f"output={out}", f"teacher={scaled}", "student_rope.rope_type=dynamic")
    fails_cleanly(r, out, "config key 'student_rope': rope_type dynamic over a teacher whose config.json has rope_type linear")
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


def test_divergence_keeps_the_best_validated_model_and_the_last_good_checkpoint(setup, tmp_path):
    config = setup[2]
    out = tmp_path / "out"
    # Measured on this teacher: the loss climbs 0.28, 0.75, 0.94, 2.6, 2.4, 4.7, ... to 87 at step 20
    # (lr 1 reached over a 20-step warmup, no clipping): step 6 passes 10x the first loss.
    unstable = ("lr=1", "warmup_steps=20", "clip_grad_norm=0", "steps=20", "checkpoint_every=1")
    r = restore(config, f"output={out}", *unstable, "divergence_factor=10")
    assert r.returncode == 1, r.stdout + r.stderr
    # The only validation before the divergence is step 0's: model/ holds the scaled model, untrained.
    summary = json.loads((out / "training_summary.json").read_text())
    step = summary["diverged"]["step"]
    assert f"the run diverged at step {step}: model/ holds the weights of step 0" in r.stderr, r.stderr
    assert summary["validation"]["chosen_step"] == 0
    restored, teacher = load_file(str(out / "model" / "model.safetensors")), load_file(str(setup[1] / "model.safetensors"))
    assert all(torch.equal(restored[n], teacher[n]) for n in teacher)
    assert not (out / "selection").exists()
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


# ---- interruptions: a run stopped at any moment resumes (resume=true) or restarts (overwrite=true)
# with nothing of the interrupted attempt mixed in; SIGINT/SIGTERM end the step, write a checkpoint
# and say how to resume; a refused run leaves nothing behind

MARKER = ".linear-ard-run"
RUN = ("steps=6", "checkpoint_every=2", "eval_every=3")


def model_bytes(out):
    return (out / "model" / "model.safetensors").read_bytes()


def step_records(out):
    keys = ("step", "stage", "loss", "grad_norm", "lr", "tokens")
    return [[m[k] for k in keys] for m in metrics(out) if not m.get("eval")]


@pytest.fixture(scope="module")
def straight(setup, tmp_path_factory):
    """The uninterrupted run every interrupted one must end equal to, and its duration."""
    import time
    out = tmp_path_factory.mktemp("straight") / "out"
    start = time.monotonic()
    r = restore(setup[2], f"output={out}", *RUN)
    assert r.returncode == 0, r.stdout + r.stderr
    return out, time.monotonic() - start


def run_killed(config, out, seconds):
    """restore started and killed (SIGKILL) after `seconds`, or ended on its own."""
    import subprocess
    from test_restore import binary
    p = subprocess.Popen([str(binary()), "restore", str(config), f"output={out}", *RUN],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        p.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


@pytest.mark.parametrize("seed", range(6))
def test_a_run_killed_at_a_random_moment_resumes_or_restarts_equal_to_a_straight_run(setup, straight, seed, tmp_path):
    """Kill times drawn (seeded) over the straight run's duration, one stratum per seed: before the
    lock, before or inside the first checkpoint, between checkpoints, inside the final write."""
    import random
    config = setup[2]
    reference, duration = straight
    moment = duration * (seed + random.Random(seed).random()) / 6
    for how in ("resume=true", "overwrite=true"):
        out = tmp_path / how.split("=")[0]
        run_killed(config, out, moment)
        r = restore(config, f"output={out}", *RUN, how)
        assert r.returncode == 0, f"killed at {moment:.2f} s of {duration:.2f} s, then {how}:\n{r.stdout}{r.stderr}"
        assert model_bytes(out) == model_bytes(reference), (moment, how)
        assert step_records(out) == step_records(reference), (moment, how)
        assert not [p for p in out.iterdir() if ".tmp" in p.name]


# What a kill inside each write leaves: the state of the folder, built by hand (the writes are too
# short for a random kill to land in each reliably).
def left_marker_only(out):
    (out / MARKER).write_text('{"run": "0123456789abcdef"}\n')


def left_marker_half_written(out):
    (out / f"{MARKER}.tmp.99999").write_text('{"ru')


def left_resolved_config_half_written(out):
    left_marker_only(out)
    (out / "resolved_config.yaml.tmp.99999").write_text("teacher: /x\nste")


def left_metrics_cut_in_a_line(out):
    left_marker_only(out)
    (out / "resolved_config.yaml").write_text("steps: 6\n")
    (out / "metrics.jsonl").write_text('{"step": 0, "eval": true, "relation_loss": 0.5}\n{"step": 1, "lo')


def left_first_checkpoint_half_written(out):
    left_metrics_cut_in_a_line(out)
    (out / "checkpoint-2.tmp").mkdir()
    (out / "checkpoint-2.tmp" / "trainable.safetensors").write_bytes(b"\0" * 10)


LEFTOVERS = {f.__name__: f for f in (left_marker_only, left_marker_half_written, left_resolved_config_half_written,
                                     left_metrics_cut_in_a_line, left_first_checkpoint_half_written)}


@pytest.mark.parametrize("case", list(LEFTOVERS))
@pytest.mark.parametrize("how", ["resume=true", "overwrite=true"])
def test_leftovers_of_a_kill_before_the_first_checkpoint_start_afresh(setup, straight, case, how, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.lock").write_text("99999\n")  # a dead holder's lock: no flock on it
    LEFTOVERS[case](out)
    r = restore(setup[2], f"output={out}", *RUN, how)
    assert r.returncode == 0, r.stdout + r.stderr
    assert model_bytes(out) == model_bytes(straight[0])
    assert step_records(out) == step_records(straight[0])
    assert not [p for p in out.iterdir() if ".tmp" in p.name]
    if how == "resume=true" and case != "left_marker_half_written":
        assert "found no checkpoint to continue from" in r.stderr, r.stderr


@pytest.mark.parametrize("signal_name,status", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_finishes_the_step_writes_a_checkpoint_and_says_how_to_resume(setup, straight, signal_name, status,
                                                                               tmp_path):
    import signal
    import subprocess
    import time
    from test_restore import binary
    out = tmp_path / "out"
    long_run = ("steps=1000", "checkpoint_every=0", "eval_every=0")
    p = subprocess.Popen([str(binary()), "restore", str(setup[2]), f"output={out}", *long_run],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if (out / "metrics.jsonl").exists() and len((out / "metrics.jsonl").read_text().splitlines()) >= 4:
            break
        time.sleep(0.05)
    p.send_signal(getattr(signal, signal_name))
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == status, stdout + stderr
    line = [l for l in stderr.splitlines() if "interrupted by " + signal_name in l]
    assert line, stderr
    import re
    step = int(re.search(r"after step (\d+)", line[0]).group(1))
    assert (out / f"checkpoint-{step}").is_dir(), sorted(e.name for e in out.iterdir())
    assert "resume=true" in line[0] and not (out / "model").exists()
    assert step < 1000, stdout  # stopped by the signal, not by the end of the run
    r = restore(setup[2], f"output={out}", *long_run, "resume=true")
    assert r.returncode == 0, r.stdout + r.stderr
    steps = [m["step"] for m in metrics(out) if not m.get("eval")]
    assert steps == list(range(1, 1001))


def test_a_refused_run_leaves_nothing_behind(setup, tmp_path):
    root, teacher, config = setup[:3]
    user = tmp_path / "user"
    user.mkdir()
    (user / "notes.txt").write_text("mine")
    before = sorted(p.name for p in teacher.iterdir())
    for out in (user, teacher):
        for how in ("overwrite=true", "resume=true", "steps=1"):
            r = restore(config, f"output={out}", how)
            assert r.returncode == 1, r.stdout + r.stderr
            assert f"output {out} exists and is not empty" in r.stderr, r.stderr
            assert "not a folder a run wrote" in r.stderr, r.stderr
    assert sorted(p.name for p in user.iterdir()) == ["notes.txt"]
    assert sorted(p.name for p in teacher.iterdir()) == before
    # A marked folder without overwrite or resume: refused, untouched.
    out = tmp_path / "done"
    assert restore(config, f"output={out}", "steps=1").returncode == 0
    listing = sorted(p.name for p in out.iterdir())
    r = restore(config, f"output={out}", "steps=1")
    assert r.returncode == 1 and "holds a previous run (set overwrite=true" in r.stderr, r.stderr
    assert sorted(p.name for p in out.iterdir()) == listing


def test_overwrite_deletes_only_what_a_run_wrote(setup, tmp_path):
    config = setup[2]
    # A user's folder that happens to hold a resolved_config.yaml: no marker, nothing deleted.
    user = tmp_path / "user"
    user.mkdir()
    for name in ("resolved_config.yaml", "metrics.jsonl", "thesis.tex"):
        (user / name).write_text("mine")
    r = restore(config, f"output={user}", "overwrite=true", "steps=1")
    assert r.returncode == 1 and "not a folder a run wrote" in r.stderr, r.stderr
    assert all((user / n).read_text() == "mine" for n in ("resolved_config.yaml", "metrics.jsonl", "thesis.tex"))
    assert not (user / "run.lock").exists()
    # A run's folder with a file of the user's inside: the run's entries replaced, the user's kept.
    out = tmp_path / "out"
    assert restore(config, f"output={out}", "steps=2", "checkpoint_every=1").returncode == 0
    (out / "notes.txt").write_text("mine")
    (out / "plots").mkdir()
    marker = json.loads((out / MARKER).read_text())
    r = restore(config, f"output={out}", "overwrite=true", "steps=1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kept 2 entries no run wrote: notes.txt, plots" in r.stderr or "kept 2 entries no run wrote: plots, notes.txt" \
        in r.stderr, r.stderr
    assert (out / "notes.txt").read_text() == "mine" and (out / "plots").is_dir()
    assert not list(out.glob("checkpoint-*")) and len([m for m in metrics(out) if not m.get("eval")]) == 1
    assert json.loads((out / MARKER).read_text())["run"] != marker["run"]


# ---- resume verifies what it resumes: the teacher's weights and tokenizer, the data files


def resumable(setup, tmp_path):
    """A copy of the teacher and the data, a run on them stopped after step 2; the config overrides."""
    root, teacher, config = setup[:3]
    copy = tmp_path / "teacher"
    shutil.copytree(teacher, copy)
    data = tmp_path / "ids.npy"
    shutil.copy(root / "ids.npy", data)
    out = tmp_path / "out"
    overrides = (f"teacher={copy}", f"data=[{data}]", f"output={out}", "steps=4")
    r = restore(config, *overrides, "stop_after_step=2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads((out / MARKER).read_text())["inputs"]["teacher"]
    return copy, data, out, overrides


def test_resume_refuses_a_replaced_teacher_naming_the_file(setup, tmp_path):
    copy, data, out, overrides = resumable(setup, tmp_path)
    tensors = load_file(str(copy / "model.safetensors"))
    tensors["model.layers.1.mlp.up_proj.weight"] *= 1.01  # another teacher of the same architecture
    save_file(tensors, str(copy / "model.safetensors"), metadata={"format": "pt"})
    r = restore(setup[2], *overrides, "resume=true")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"teacher file {copy / 'model.safetensors'} has other contents" in r.stderr, r.stderr
    assert "config key 'resume'" in r.stderr and not (out / "model").exists()


def test_resume_refuses_changed_data_and_tokenizer_and_accepts_a_touched_copy(setup, tmp_path):
    import os
    import time
    import numpy as np
    copy, data, out, overrides = resumable(setup, tmp_path)
    later = time.time() + 5
    os.utime(copy / "model.safetensors", (later, later))  # the same bytes with a new mtime: unchanged
    ids = np.load(data)
    np.save(data, np.concatenate([ids[1:], ids[:1]]))  # the same size, other contents
    tokenizer = (copy / "tokenizer.json").read_bytes()
    (copy / "tokenizer.json").write_bytes(tokenizer.replace(b'"<s>"', b'"<S>"', 1))
    r = restore(setup[2], *overrides, "resume=true")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"data file {data} has other contents" in r.stderr, r.stderr
    assert f"tokenizer file {copy / 'tokenizer.json'} has" in r.stderr, r.stderr
    assert "model.safetensors" not in r.stderr, r.stderr
    np.save(data, ids)
    (copy / "tokenizer.json").write_bytes(tokenizer)
    r = restore(setup[2], *overrides, "resume=true")
    assert r.returncode == 0, r.stdout + r.stderr


# ---- the memory plan of training: refused from the sizes with the estimate and the free memory


# Sizes beyond any machine (10^8 blocks a micro-batch): the plan refuses them wherever the tests run.
@pytest.mark.parametrize("overrides,messages", [
    (("batch_size=100000000",), ["restore stage 1 at ctx 32 x batch 100000000", "activations kept for backward",
                                 "AdamW moments", "teacher forward"]),
    (("stage2.steps=1", "stage2.batch_size=100000000"), ["restore stage 2 at ctx 128 x batch 100000000",
                                                         "LM loss (the head in chunks)"]),
])
def test_training_beyond_memory_is_refused_by_the_plan(setup, tmp_path, overrides, messages):
    out = tmp_path / "out"
    r = restore(setup[2], f"output={out}", *overrides)
    fails_cleanly(r, out, "needs an estimated", "of memory available on cpu", *messages)
    assert "bad_alloc" not in r.stderr and "CPUAllocator" not in r.stderr
    assert not out.exists()


def test_the_plan_counts_the_validations_passkey(setup, tmp_path):
    """A passkey validation longer than training's blocks needs more than a training step: its KV cache
    and prompt forward are the plan's largest candidate, beside the weights and optimizer state."""
    lengths = {"[]": "restore stage 1 at ctx 32 x batch 1 needs an estimated",
               "[128]": "restore validation, passkey at 128 needs an estimated"}
    for value, plan in lengths.items():
        r = restore(setup[2], f"output={tmp_path / 'out'}", "overwrite=true", f"val_passkey.lengths={value}",
                    "val_passkey.samples=1")
        assert r.returncode == 0, r.stdout + r.stderr
        line = next(line for line in r.stdout.splitlines() if "needs an estimated" in line)
        assert line.startswith(plan), line
        if value != "[]":
            assert "KV cache of 160 positions" in line and "AdamW moments" in line, line


def test_lora_rank_beyond_the_matrices_is_refused(setup, tmp_path):
    out = tmp_path / "out"
    r = restore(setup[2], f"output={out}", "trainable=lora_qkv", "lora.rank=1000000000")
    fails_cleanly(r, out, "config key 'lora.rank' (1000000000) exceeds the smaller side of an adapted matrix (16)")
    assert not out.exists()


# ---- vague errors made precise


@pytest.mark.parametrize("override,message", [
    ("student_rope.factor=.inf", "config key 'student_rope.factor' must be a finite number, got .inf"),
    ("student_rope.factor=.nan", "config key 'student_rope.factor' must be a finite number"),
    ("lr=.inf", "config key 'lr' must be a finite number, got .inf"),
    ("student_rope.factor=1", "config key 'student_rope.factor' (1) leaves the student's RoPE equal to the teacher's"),
    ("student_rope.factor=1000000000", "max_position_embeddings must be <= 16777216"),
])
def test_impossible_numbers_are_named(setup, tmp_path, override, message):
    out = tmp_path / "out"
    r = restore(setup[2], f"output={out}", override)
    fails_cleanly(r, out, message)
    assert "-9223372036854775808" not in r.stderr
    assert not out.exists()
