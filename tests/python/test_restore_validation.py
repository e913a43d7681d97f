"""A restoration the user can rely on, end to end on CPU: the run's validation (the KL from the
native model's next-token distribution to the student's, against transformers; exactly 0 for the
native RoPE), the data flow (stage 2 continuing stage 1's stream, the summary's counts, one warning
when data runs out), two runs of one config bitwise equal, and `recipe: paper`.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_restore_validation.py
"""

import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_restore import restore  # noqa: E402
from test_restore_options import CTX, setup  # noqa: E402,F401  (the tiny teacher, its .npy stream, its config)

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "models" / "demo"


def records(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def run_ok(config, out, *overrides):
    r = restore(config, f"output={out}", "overwrite=true", *overrides)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo model's config for PI x8, with validation blocks of its held-out text as a .npy
    (ids from transformers' tokenizer of the folder), so that a reference knows every block."""
    root = tmp_path_factory.mktemp("validation_demo")
    tok = transformers.AutoTokenizer.from_pretrained(str(DEMO))
    ids = []
    for line in (ROOT / "data" / "demo" / "heldout.jsonl").read_text().splitlines()[:20]:
        ids += tok(json.loads(line)["text"])["input_ids"] + [tok.eos_token_id]
    np.save(root / "val.npy", np.array(ids, dtype=np.uint32))
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump({
        "teacher": str(DEMO), "student_rope": {"rope_type": "linear", "factor": 8},
        "data": [str(ROOT / "data" / "demo" / "restore.jsonl")], "val_data": [str(root / "val.npy")],
        "val_blocks": 3, "val_ctx_len": 256, "val_passkey": {"samples": 0}, "ctx_len": 64, "steps": 1,
        "lr": 1e-3, "device": "cpu", "dtype": "fp32"}))
    return root, config, torch.tensor(ids[:3 * 256]).view(3, 256)


def test_validation_kl_matches_transformers(demo):
    """Step 0's val_kl, val_ppl and native_ppl against transformers' LlamaForCausalLM on the same
    folder (native, and with the PI x8 rope_scaling) and the same three 256-token blocks: fp32 on
    both sides, so they agree to fp32 rounding of the logits (relative 1e-4 leaves room for the
    different summation orders of two fp32 implementations; the KL itself is ~1e-1)."""
    root, config, blocks = demo
    out = root / "kl"
    run_ok(config, out)
    first = records(out)[0]
    assert first["eval"] and first["step"] == 0 and first["val_tokens"] == 3 * 255
    native = transformers.AutoModelForCausalLM.from_pretrained(str(DEMO), dtype=torch.float32).eval()
    cfg = transformers.AutoConfig.from_pretrained(str(DEMO))
    cfg.rope_parameters = {"rope_type": "linear", "factor": 8.0, "rope_theta": cfg.rope_parameters["rope_theta"]}
    cfg.max_position_embeddings = 256 * 8
    scaled = transformers.AutoModelForCausalLM.from_pretrained(str(DEMO), config=cfg, dtype=torch.float32).eval()
    with torch.no_grad():
        log_n = torch.log_softmax(native(blocks).logits[:, :-1].double(), -1)
        log_s = torch.log_softmax(scaled(blocks).logits[:, :-1].double(), -1)
    kl = (log_n.exp() * (log_n - log_s)).sum(-1).mean().item()
    targets = blocks[:, 1:].unsqueeze(-1)
    ppl = math.exp(-log_s.gather(-1, targets).mean().item())
    native_ppl = math.exp(-log_n.gather(-1, targets).mean().item())
    assert kl > 0.01
    assert first["val_kl"] == pytest.approx(kl, rel=1e-4)
    assert first["val_ppl"] == pytest.approx(ppl, rel=1e-4)
    assert first["native_ppl"] == pytest.approx(native_ppl, rel=1e-4)


def test_validation_kl_is_zero_for_the_native_rope(demo):
    """PI with factor 1 is the native RoPE: the student's next-token distributions are the native
    model's, bit for bit, before training. Method cpt: the relation objectives refuse factor 1 (they
    would compare the model with itself); the validation is the same for every method."""
    root, config, _ = demo
    out = root / "native"
    run_ok(config, out, "student_rope.factor=1", "method=cpt")
    first = records(out)[0]
    assert first["val_kl"] == 0.0
    assert first["val_ppl"] == first["native_ppl"]


def file_hash(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_two_cpu_runs_of_one_config_are_bitwise_equal(setup, tmp_path):
    """Shuffled data, LoRA with dropout, two stages, validations: the same config and seed give the
    same bytes."""
    config = setup[2]
    common = ("trainable=lora_qkv", "lora.dropout=0.1", "data_shuffle=64", "val_blocks=2", "steps=4", "eval_every=2",
              "stage2.steps=2", f"stage2.ctx_len={2 * CTX}")
    a, b = tmp_path / "a", tmp_path / "b"
    run_ok(config, a, *common)
    run_ok(config, b, *common)
    assert file_hash(a / "model" / "model.safetensors") == file_hash(b / "model" / "model.safetensors")
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("tokens_per_s", "step_time_s", "peak_memory_bytes", "memory_bytes", "memory_reserved_bytes")} for r in rs]
    assert strip(records(a)) == strip(records(b))


def test_stage2_continues_the_stream_and_the_summary_counts_it(setup, tmp_path):
    """Stage 2 reads the .npy stream after stage 1's blocks: with no shuffle, its first block is
    the one after stage 1's last (a CPT loss identifies it); the data runs out in stage 2 only, with
    one warning naming it; training_summary.json counts tokens, distinct tokens and passes."""
    root, _, config = setup[:3]
    ids = np.load(root / "ids.npy")
    blocks = len(ids) // CTX - 1  # after the one validation block
    steps1 = blocks // 2
    steps2 = blocks - steps1 + 2  # runs past the end of the data
    out = tmp_path / "out"
    r = run_ok(config, out, "method=cpt", "lr=1e-30", "warmup_steps=0", "data_shuffle=0", "val_blocks=1",
               f"steps={steps1}", f"stage2.steps={steps2}", f"stage2.ctx_len={CTX}", "stage2.lr=1e-30")
    warnings = [line for line in r.stderr.splitlines() if "ran out of data" in line]
    assert len(warnings) == 1 and "stage 2 ran out of data" in warnings[0], r.stderr
    summary = json.loads((out / "training_summary.json").read_text())
    s1, s2 = summary["stages"]
    assert (s1["stage"], s1["tokens_consumed"], s1["distinct_tokens"], s1["passes_completed"]) == (1, steps1 * CTX, steps1 * CTX, 0)
    assert (s2["stage"], s2["tokens_consumed"], s2["passes_completed"]) == (2, steps2 * CTX, 1)
    assert s2["distinct_tokens"] == steps2 * CTX  # after the end, stage 2 re-reads stage 1's first blocks
    assert s1["data"] == s2["data"] == [str(root / "ids.npy")]
    # With an lr that moves nothing, step i's loss is the initial student's on its block: stage 2's
    # first loss is stage 1's next block's, which no stage-1 step had.
    steps = [x for x in records(out) if not x.get("eval")]
    losses1 = {round(x["loss_lm"], 6) for x in steps if x["stage"] == 1}
    first2 = steps[steps1]
    assert first2["stage"] == 2 and round(first2["loss_lm"], 6) not in losses1


def test_recipe_paper_applies_under_the_files_keys(setup, tmp_path):
    config = setup[2]
    text = yaml.safe_load(config.read_text())
    text.update(recipe="paper", lr=1e-3)
    paper = tmp_path / "paper.yaml"
    paper.write_text(yaml.safe_dump(text))
    out = tmp_path / "out"
    run_ok(paper, out, "steps=1", "stage2.steps=1")
    resolved = yaml.safe_load((out / "resolved_config.yaml").read_text())
    assert resolved["recipe"] == "paper" and resolved["lr"] == 1e-3  # the file's key wins
    assert resolved["checkpoint_layers"] is True and resolved["trainable"] == "qkv"
    assert resolved["stage2"]["lr"] == 2e-5 and resolved["stage2"]["steps"] == 1  # nested: key by key
    r = restore(config, f"output={tmp_path / 'bad'}", "recipe=nosuch")
    assert r.returncode == 1 and "config key 'recipe' names no bundled recipe: 'nosuch' (bundled: paper)" in r.stderr, r.stderr
