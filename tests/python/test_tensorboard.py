"""TensorBoard event files of a run: `linear-ard restore` starts scripts/tensorboard_follow.py
beside the run, and what it writes under OUT/tensorboard/ reads back with TensorBoard's own
EventAccumulator (what `tensorboard --logdir OUT` serves) as every number of metrics.jsonl, at its
step, per stage and held out; `tensorboard: false` writes none. The follower writes while the run
goes: lines appended to a metrics.jsonl show up in the events before its input is closed.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_tensorboard.py
"""

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_teacher  # noqa: E402
from test_restore import restore  # noqa: E402

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                                        reason="tensorboard is not installed (requirements.txt lists it)")
ROOT = Path(__file__).resolve().parents[2]
CTX = 16


def scalars(logdir):
    """{tag: [(step, value), ...]} of every event file under `logdir`, as TensorBoard reads them."""
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def expected(records):
    """The same numbers from metrics.jsonl, tagged the way the follower documents."""
    out = {}
    for r in records:
        prefix = "eval" if r.get("eval") else f"stage{r.get('stage', 1)}"
        for key, value in r.items():
            if key not in ("step", "stage", "eval") and isinstance(value, (int, float)) and not isinstance(value, bool):
                out.setdefault(f"{prefix}/{key}", []).append((r["step"], value))
    return out


@pytest.fixture(scope="module")
def config(tmp_path_factory):
    root = tmp_path_factory.mktemp("tensorboard")
    rng = random.Random(2)
    texts = [" ".join(rng.choice("a tiny run logs its loss to tensorboard".split()) for _ in range(30))
             for _ in range(20)]
    teacher = tiny_teacher.teacher_make(root / "teacher", texts, hidden=32, intermediate=64, layers=2, heads=4,
                                        kv_heads=2, max_positions=CTX, vocab_size=300, seed=0)
    ids = np.random.default_rng(0).integers(3, 250, size=CTX * 12)
    np.save(root / "ids.npy", ids.astype(np.uint16))
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump({
        "teacher": str(teacher), "student_rope": {"rope_type": "linear", "factor": 2}, "data": [str(root / "ids.npy")],
        "ctx_len": CTX, "steps": 3, "eval_every": 1, "stage2": {"steps": 2}, "lr": 1e-3, "device": "cpu",
        # 192 tokens of data: two validation blocks; no passkey (its prompt needs more than 32 positions).
        "dtype": "fp32", "val_blocks": 2, "val_passkey": {"samples": 0}}))
    return path


def test_run_writes_every_metric_as_tensorboard_scalars(config, tmp_path, monkeypatch):
    monkeypatch.setenv("LINEAR_ARD_NO_TENSORBOARD", "0")
    out = tmp_path / "out"
    r = restore(config, f"output={out}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning" not in r.stderr, r.stderr
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    want, got = expected(records), scalars(out / "tensorboard")
    assert {"stage1/loss", "stage1/loss_q", "stage2/loss", "eval/logit_kl", "stage1/lr"} <= set(want)
    assert sorted(got) == sorted(want)
    for tag, points in want.items():
        assert [s for s, _ in got[tag]] == [s for s, _ in points], tag
        # Event files hold float32 scalars.
        assert [v for _, v in got[tag]] == pytest.approx([v for _, v in points], rel=1e-6), tag


def test_tensorboard_false_writes_no_events(config, tmp_path, monkeypatch):
    monkeypatch.setenv("LINEAR_ARD_NO_TENSORBOARD", "0")
    out = tmp_path / "out"
    r = restore(config, f"output={out}", "tensorboard=false", "steps=1", "stage2.steps=0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "metrics.jsonl").exists() and not (out / "tensorboard").exists()


def test_follower_writes_while_the_run_goes(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(json.dumps({"step": 1, "stage": 1, "loss": 2.0}) + "\n")
    follower = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "tensorboard_follow.py"), str(tmp_path)],
                                stdin=subprocess.PIPE)
    try:
        with metrics.open("a") as f:
            f.write(json.dumps({"step": 2, "stage": 1, "loss": 1.5}) + "\n" + '{"step": 3, "sta')  # a half line
            f.flush()
            deadline = time.time() + 60
            while time.time() < deadline:
                got = scalars(tmp_path / "tensorboard") if (tmp_path / "tensorboard").exists() else {}
                if len(got.get("stage1/loss", [])) == 2:
                    break
                time.sleep(0.5)
            assert got.get("stage1/loss") == [(1, 2.0), (2, 1.5)]
            assert follower.poll() is None  # still following
            f.write('ge": 1, "loss": 1.25}\n')
    finally:
        follower.stdin.close()
        assert follower.wait(timeout=60) == 0
    assert scalars(tmp_path / "tensorboard")["stage1/loss"] == [(1, 2.0), (2, 1.5), (3, 1.25)]


def test_previous_runs_metrics_are_not_followed(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "loss": 2.0}) + "\n")
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "tensorboard_follow.py"), str(tmp_path),
                        "--since", str(time.time() + 10)], stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "tensorboard").exists()
