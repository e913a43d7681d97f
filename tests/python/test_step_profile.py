"""The step profile (`profile_steps`, train/step_profile.h) and the real-model step benchmark's peer.

- A profiled `linear-ard restore` run writes profile/trace.json (Chrome trace: every phase range of
  each profiled step, and torch's operators) and profile/summary.md (each phase once per step), and
  trains exactly as the same run without the profile (same losses, bit for bit).
- benchmarks/bench_step_real.py's plain-PyTorch step (transformers, dense relation KL) computes the
  trainer's loss: on the same first block its loss equals ours, for the ARD step and the LM-loss
  steps, in fp32 on the CPU. This is what makes its speed a fair peer.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_step_profile.py
"""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_teacher  # noqa: E402
from test_restore import binary  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PHASES = ("data", "cast_trainables", "teacher_forward", "student_forward", "relation_loss", "backward",
          "clip_grad_norm", "optimizer")


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    root = tmp_path_factory.mktemp("profile")
    rng = random.Random(1)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(30, 70))) + "." for _ in range(120)]
    teacher = tiny_teacher.teacher_make(root / "teacher", texts, hidden=48, intermediate=96, layers=3, heads=3,
                                        kv_heads=1, max_positions=40, vocab_size=280, qk_std=0.2, seed=3)
    tiny_teacher.data_write(root / "data.jsonl", texts)
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump({
        "teacher": str(teacher), "student_rope": {"rope_type": "linear", "factor": 4},
        "data": [str(root / "data.jsonl")], "ctx_len": 37, "batch_size": 3, "steps": 5, "lr": 1e-3,
        "warmup_steps": 1, "device": "cpu", "dtype": "fp32"}))
    return root, path


def restore(config_path, *overrides):
    return subprocess.run([str(binary()), "restore", str(config_path), *overrides], capture_output=True, text=True,
                          timeout=300)


def losses(folder):
    return [json.loads(line)["loss"] for line in (folder / "metrics.jsonl").read_text().splitlines()
            if not json.loads(line).get("eval")]


def test_profile_writes_trace_and_summary_and_changes_nothing(config):
    root, path = config
    r = restore(path, f"output={root / 'plain'}")
    assert r.returncode == 0, r.stdout + r.stderr
    r = restore(path, f"output={root / 'profiled'}", "profile_steps=2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "profile: steps 2-3 written to" in r.stdout
    assert losses(root / "profiled") == losses(root / "plain")

    trace = json.loads((root / "profiled" / "profile" / "trace.json").read_text())
    names = [e.get("name", "") for e in trace["traceEvents"]]
    for phase in PHASES:
        assert names.count(f"phase:{phase}") == 2, (phase, names.count(f"phase:{phase}"))
    assert any(n == "aten::mm" or n == "aten::addmm" for n in names)

    summary = (root / "profiled" / "profile" / "summary.md").read_text()
    assert "restore stage 1, ard, trainable qkv, ctx 37 x batch 3 x accum 1, cpu fp32" in summary
    assert "2 profiled step(s), 111 tokens each" in summary
    for phase in PHASES:
        row = next(line for line in summary.splitlines() if line.startswith(f"| `{phase}` |"))
        assert row.split("|")[2].strip() == "1.0", row  # once per step
    assert "| CPU operator (self time) |" in summary


def test_profile_of_more_steps_than_the_run_stops_at_its_end(config):
    root, path = config
    r = restore(path, f"output={root / 'long'}", "profile_steps=50", "method=cpt", "trainable=full", "steps=3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "profile: steps 2-3 written to" in r.stdout
    summary = (root / "long" / "profile" / "summary.md").read_text()
    assert "| `lm_loss` |" in summary and "teacher_forward" not in summary


def test_negative_profile_steps_is_refused(config):
    root, path = config
    r = restore(path, f"output={root / 'bad'}", "profile_steps=-1")
    assert r.returncode != 0 and "profile_steps" in r.stderr and "must be >= 0" in r.stderr, r.stderr
    assert not (root / "bad").exists()


def test_bench_peer_computes_the_trainers_loss(tmp_path):
    out = tmp_path / "bench"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_step_real.py"), "--tiny", "--cli",
                        str(binary()), "--cases", "ard:61:2,stage2:97:1,cpt:97:1", "--steps", "1", "--warmup", "1",
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert [row["kind"] for row in rows] == ["ard", "stage2", "cpt"]
    for row in rows:
        # fp32 on both sides; the dense KL sums n x n terms in another order than the fused operator.
        assert row["peer_loss"] == pytest.approx(row["ours_loss"], rel=2e-5), row
        assert row["ours_tok_s"] > 0 and row["peer_tok_s"] > 0
    assert r.stdout.strip().splitlines()[-1].startswith("| cpt | 97 x 1 |")
