"""End-to-end tests of `linear-ard restore` on CPU with a tiny random LLaMA teacher.

The teacher (2 layers, native context 64) and its byte-level BPE tokenizer come from
tests/python/tiny_teacher.py, trained on generated text over a small word set so that what the
student learns on training blocks carries over to the held-out block. A 20-step PI x8 run must lower
the held-out relation loss, the attention-map KL and the monitored (not optimised) output-logit KL,
and write an HF folder transformers loads with the scaled RoPE, in which only q/k/v differ from the
teacher. Bad configs must fail with an error naming the problem and leave no output folder.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_restore.py
"""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers
import yaml
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_teacher  # noqa: E402

CTX, STEPS, FACTOR = 64, 20, 8


def binary():
    build = os.environ.get("LINEAR_ARD_BUILD_DIR")
    if not build:
        pytest.skip("LINEAR_ARD_BUILD_DIR is not set (scripts/test.sh sets it to the build folder)")
    path = Path(build) / "src" / "cli" / "linear-ard"
    assert path.is_file(), f"{path} is missing: build the linear_ard_cli target"
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("restore")
    rng = random.Random(0)
    words = ("the model restores relation attention query key value rope scaled student teacher "
             "short context long").split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(20, 60))) + "." for _ in range(300)]
    teacher = tiny_teacher.teacher_make(root / "teacher", texts, hidden=64, intermediate=128,
                                             layers=2, heads=4, kv_heads=2, max_positions=CTX,
                                             vocab_size=300, qk_std=0.15, seed=0)
    tiny_teacher.data_write(root / "data.jsonl", texts)
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump({
        "teacher": str(teacher), "student_rope": {"rope_type": "linear", "factor": FACTOR},
        "data": [str(root / "data.jsonl")], "ctx_len": CTX, "steps": STEPS, "lr": 3e-4,
        "warmup_steps": 2, "eval_every": 10, "log_every": 5, "device": "cpu", "dtype": "fp32"}))
    return root, teacher, config


def restore(config, *overrides):
    return subprocess.run([str(binary()), "restore", str(config), *overrides],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def run(setup):
    root, teacher, config = setup
    out = root / "out"
    r = restore(config, f"output={out}")
    assert r.returncode == 0, r.stdout + r.stderr
    return out, teacher


def test_metrics_and_token_accounting(run):
    out, _ = run
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if not r.get("eval")]
    evals = [r for r in records if r.get("eval")]
    assert [r["step"] for r in steps] == list(range(1, STEPS + 1))
    assert [r["step"] for r in evals] == [0, 10, 20]
    for r in steps:
        assert r["tokens"] == CTX * 1 * 1 * r["step"]  # L * B * A * U * G (G = 1)
        for key in ("loss", "loss_q", "loss_k", "loss_v", "lr", "grad_norm", "tokens_per_s",
                    "step_time_s", "peak_memory_bytes"):
            assert key in r and r[key] == r[key], key
    assert steps[0]["lr"] < steps[2]["lr"]  # warmup
    assert steps[-1]["lr"] == pytest.approx(3e-4 * 0.1)  # cosine ends at min_lr_ratio * lr
    summary = json.loads((out / "training_summary.json").read_text())
    assert summary["token_budget"]["tokens"] == CTX * STEPS == summary["tokens_trained"]
    resolved = yaml.safe_load((out / "resolved_config.yaml").read_text())
    assert resolved["steps"] == STEPS and resolved["student_rope"] == {"rope_type": "linear", "factor": FACTOR}
    assert resolved["lambda_v"] == 1 and resolved["clip_grad_norm"] == 5


def test_restoration_lowers_losses(run):
    out, _ = run
    summary = json.loads((out / "training_summary.json").read_text())
    before, after = summary["eval_before"], summary["eval_after"]
    assert after["relation_loss"] < 0.95 * before["relation_loss"], (before, after)
    assert after["attention_kl"] < before["attention_kl"], (before, after)
    assert after["logit_kl"] < before["logit_kl"], (before, after)
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in steps if not r.get("eval")]
    assert sum(losses[-5:]) < sum(losses[:5]), losses


def test_output_folder_loads_in_transformers(run):
    out, teacher = run
    model_dir = out / "model"
    model = transformers.AutoModelForCausalLM.from_pretrained(str(model_dir))
    rope = model.config.rope_parameters
    assert rope["rope_type"] == "linear" and rope["factor"] == FACTOR
    assert model.config.max_position_embeddings == CTX * FACTOR
    tok = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    assert tok("relation attention")["input_ids"][0] == tok.bos_token_id
    with torch.no_grad():
        assert torch.isfinite(model(torch.tensor([[0, 5, 7, 9]])).logits).all()

    original, restored = load_file(str(teacher / "model.safetensors")), load_file(str(model_dir / "model.safetensors"))
    assert original.keys() == restored.keys()
    for name, t in original.items():
        if any(p in name for p in ("q_proj", "k_proj", "v_proj")):
            assert not torch.equal(t, restored[name]), f"{name} was not trained"
        else:
            assert torch.equal(t, restored[name]), f"{name} changed"


@pytest.mark.parametrize("override,message", [
    ("foo=1", "unknown config key 'foo'"),
    ("teacher=/nonexistent/teacher", "config key 'teacher': folder /nonexistent/teacher does not exist"),
    (f"ctx_len={2 * CTX}", "exceeds the teacher's native max_position_embeddings"),
    ("student_rope.rope_type=bogus", "student_rope"),
    ("steps=abc", "config key 'steps' must be an integer"),
])
def test_bad_config_fails_without_output(setup, override, message):
    root, _, config = setup
    out = root / f"bad_{abs(hash(override))}"
    r = restore(config, f"output={out}", override)
    assert r.returncode != 0
    assert message in r.stderr, r.stderr
    assert not out.exists()


def test_docs_key_table_is_the_generated_one():
    """docs/restore.md's key table is `linear-ard restore --list-keys` (one field table defines both)."""
    r = subprocess.run([str(binary()), "restore", "--list-keys"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    docs = (Path(__file__).resolve().parents[2] / "docs" / "restore.md").read_text(encoding="utf-8")
    begin = "<!-- keys: generated by `linear-ard restore --list-keys` -->\n"
    table = docs[docs.index(begin) + len(begin):docs.index("<!-- end keys -->")]
    assert table == r.stdout, "regenerate the table in docs/restore.md with `linear-ard restore --list-keys`"
