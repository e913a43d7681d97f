"""The options of `linear-ard restore` beyond the default recipe, on CPU with a tiny random teacher.

Each runs a few steps on a pre-tokenised .npy stream (so the tests know every batch) and checks that
it does what docs/restore.md says: step-1 losses (computed before any update) against independent
PyTorch/transformers computations, LoRA/full trainable sets, stage-2 token accounting, bit-for-bit
resume, the curves SVG, and clear errors.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_restore_options.py
"""

import json
import math
import random
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
import yaml
from safetensors.torch import load_file
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_teacher  # noqa: E402
from relation_kl_dense import relation_kl_dense  # noqa: E402
from test_restore import restore  # noqa: E402

CTX, FACTOR = 32, 4


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("options")
    rng = random.Random(1)
    words = "the model restores relation attention query key value rope scaled student teacher".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(20, 40))) + "." for _ in range(60)]
    teacher = tiny_teacher.teacher_make(root / "teacher", texts, hidden=32, intermediate=64, layers=2,
                                             heads=4, kv_heads=2, max_positions=CTX, vocab_size=300,
                                             qk_std=0.15, seed=0)
    tok = transformers.AutoTokenizer.from_pretrained(str(teacher))
    ids = [i for t in texts for i in tok(t)["input_ids"] + [tok.eos_token_id]]
    np.save(root / "ids.npy", np.array(ids, dtype=np.uint16))
    student = root / "student_hf"
    shutil.copytree(teacher, student)
    cfg = json.loads((student / "config.json").read_text())
    cfg.pop("rope_parameters", None)
    cfg["rope_scaling"] = {"rope_type": "linear", "factor": float(FACTOR)}
    cfg["max_position_embeddings"] = CTX * FACTOR
    (student / "config.json").write_text(json.dumps(cfg))
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump({
        "teacher": str(teacher), "student_rope": {"rope_type": "linear", "factor": FACTOR},
        "data": [str(root / "ids.npy")], "ctx_len": CTX, "steps": 3, "lr": 1e-3, "device": "cpu",
        "dtype": "fp32", "log_every": 10,
        # One validation block and the stream's order: the tests know which block each step reads.
        "val_blocks": 1, "data_shuffle": 0}))
    models = {name: transformers.AutoModelForCausalLM.from_pretrained(str(p)).eval()
              for name, p in (("teacher", teacher), ("student", student))}
    batch = torch.tensor(ids[CTX:2 * CTX]).unsqueeze(0)  # block 0 is held out; block 1 trains first
    return root, teacher, config, models, batch


def run(setup, name, *overrides):
    root, _, config, _, _ = setup
    out = root / name
    r = restore(config, f"output={out}", "overwrite=true", *overrides)
    assert r.returncode == 0, r.stdout + r.stderr
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return out, [r for r in records if not r.get("eval")]


def qkv(model, ids, layer):
    """Post-RoPE q, k, v [B, H, n, d] of `layer`, recomputed from the HF modules."""
    with torch.no_grad():
        hs = model(ids, output_hidden_states=True).hidden_states
        block = model.model.layers[layer]
        x = block.input_layernorm(hs[layer])
        attn, (b, n) = block.self_attn, ids.shape
        d = attn.head_dim
        q = attn.q_proj(x).view(b, n, -1, d).transpose(1, 2)
        k = attn.k_proj(x).view(b, n, -1, d).transpose(1, 2)
        v = attn.v_proj(x).view(b, n, -1, d).transpose(1, 2)
        cos, sin = model.model.rotary_emb(x, torch.arange(n).unsqueeze(0))
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
    return q, k, v


def kl_mean(xs, ys, xt, yt):
    return relation_kl_dense(xs, ys, xt, yt, causal=True)[0].mean().item()


def test_layers_all_averages_layers(setup):
    _, (first, *_) = run(setup, "layers_all", "layers=all", "steps=1")
    per_layer = [run(setup, f"layer_{l}", f"layers=[{l}]", "steps=1")[1][0]["loss"] for l in (0, 1)]
    assert first["loss"] == pytest.approx(sum(per_layer) / 2, rel=1e-5)
    _, models, batch = setup[2], setup[3], setup[4]
    t, s = qkv(models["teacher"], batch, 0), qkv(models["student"], batch, 0)
    assert per_layer[0] == pytest.approx(sum(kl_mean(s[i], s[i], t[i], t[i]) for i in range(3)), rel=1e-4)


def test_attention_objective_matches_pytorch(setup):
    _, (first, *_) = run(setup, "attention", "objective.relations=attention", "steps=1")
    models, batch = setup[3], setup[4]
    (tq, tk, tv), (sq, sk, sv) = qkv(models["teacher"], batch, 1), qkv(models["student"], batch, 1)
    attention, vv = kl_mean(sq, sk, tq, tk), kl_mean(sv, sv, tv, tv)
    assert first["loss_attention"] == pytest.approx(attention, rel=1e-4)
    assert first["loss"] == pytest.approx(attention + vv, rel=1e-4)
    assert "loss_q" not in first
    _, (no_v, *_) = run(setup, "attention_no_v", "objective.relations=attention", "lambda_v=0", "steps=1")
    assert no_v["loss"] == pytest.approx(attention, rel=1e-4)


def test_logit_kl_matches_pytorch(setup):
    _, (first, *_) = run(setup, "logit_kl", "objective.logit_kl=0.5", "objective.temperature=2",
                         "objective.last_k_positions=8", "steps=1")
    models, batch = setup[3], setup[4]
    with torch.no_grad():
        zt, zs = (models[m](batch).logits[:, -8:] / 2 for m in ("teacher", "student"))
    lt, ls = zt.log_softmax(-1), zs.log_softmax(-1)
    kl = (lt.exp() * (lt - ls)).sum(-1).mean().item()
    assert first["loss_logit_kl"] == pytest.approx(kl, rel=1e-4)
    relations = first["loss_q"] + first["loss_k"] + first["loss_v"]
    assert first["loss"] == pytest.approx(relations + 0.5 * kl, rel=1e-5)


def test_cpt_and_longred_match_pytorch(setup):
    models, batch = setup[3], setup[4]
    _, (cpt, *_) = run(setup, "cpt", "method=cpt", "steps=1")
    with torch.no_grad():
        ce = models["student"](batch, labels=batch).loss.item()
    assert cpt["loss_lm"] == pytest.approx(ce, rel=1e-5) and cpt["loss"] == cpt["loss_lm"]
    _, (lr, *_) = run(setup, "longred", "method=longred", "steps=1")
    with torch.no_grad():
        ht, hs = (models[m](batch, output_hidden_states=True).hidden_states[-1] for m in ("teacher", "student"))
    cos = (1 - torch.nn.functional.cosine_similarity(hs, ht, dim=-1)).mean().item()
    assert lr["loss_hidden_cos"] == pytest.approx(cos, rel=1e-4)


def test_lora_trains_adapters_and_merges(setup):
    out, steps = run(setup, "lora", "trainable=lora_qkv", "lora.rank=4", "lora.alpha=8", "save_adapters=true")
    teacher = setup[1]
    adapter_cfg = json.loads((out / "adapters" / "adapter_config.json").read_text())
    assert adapter_cfg["peft_type"] == "LORA" and adapter_cfg["r"] == 4 and adapter_cfg["lora_alpha"] == 8
    assert sorted(adapter_cfg["target_modules"]) == ["k_proj", "q_proj", "v_proj"]
    adapters = load_file(str(out / "adapters" / "adapter_model.safetensors"))
    assert len(adapters) == 2 * 3 * 2
    original, merged = load_file(str(teacher / "model.safetensors")), load_file(str(out / "model" / "model.safetensors"))
    for name, w in original.items():
        module = name[:-len(".weight")]
        key = f"base_model.model.{module}.lora_A.weight"
        if key in adapters:
            a, b = adapters[key], adapters[f"base_model.model.{module}.lora_B.weight"]
            assert b.abs().max() > 0, f"{module} adapter was not trained"
            torch.testing.assert_close(merged[name], w + 2.0 * b @ a, rtol=1e-5, atol=1e-6)
            assert not torch.equal(merged[name], w)
        else:
            assert torch.equal(merged[name], w), f"{name} changed"
    assert steps[-1]["loss"] < steps[0]["loss"]


def test_full_trains_every_tensor(setup):
    out, _ = run(setup, "full", "trainable=full", "objective.logit_kl=1")
    original, restored = load_file(str(setup[1] / "model.safetensors")), load_file(str(out / "model" / "model.safetensors"))
    changed = [n for n, t in original.items() if not torch.equal(t, restored[n])]
    assert any("mlp" in n for n in changed) and any("embed_tokens" in n for n in changed), changed


def test_stage2_token_accounting(setup):
    out, steps = run(setup, "stage2", "steps=2", "grad_accum=2", "stage2.steps=2", f"stage2.ctx_len={2 * CTX}",
                     "stage2.lr=1e-4")
    assert [(r["step"], r["stage"]) for r in steps] == [(1, 1), (2, 1), (3, 2), (4, 2)]
    assert [r["tokens"] for r in steps] == [2 * CTX, 4 * CTX, 6 * CTX, 8 * CTX]
    summary = json.loads((out / "training_summary.json").read_text())
    assert [s["tokens"] for s in summary["token_budget"]["stages"]] == [CTX * 2 * 2, 2 * CTX * 2]
    assert summary["token_budget"]["tokens"] == summary["tokens_trained"] == 8 * CTX
    assert "loss_lm" in steps[-1]


@pytest.mark.parametrize("options", [("trainable=lora_all",), ("data_shuffle=3", "seed=5")], ids=["lora", "shuffle"])
def test_resume_is_bit_for_bit(setup, options):
    """A run stopped after step 3 and resumed matches the straight run step for step and bit for bit
    (with data_shuffle: the shuffle buffer's draws replayed)."""
    common = ("steps=4", "stage2.steps=2", f"stage2.ctx_len={2 * CTX}", "checkpoint_every=2", *options)
    straight, s_steps = run(setup, "straight", *common)
    resumed, _ = run(setup, "resumed", *common, "stop_after_step=3")
    assert not (resumed / "model").exists() and (resumed / "checkpoint-3").is_dir()
    assert not list(resumed.glob("*.tmp"))
    root, _, config, _, _ = setup
    r = restore(config, f"output={resumed}", *common, "resume=true")
    assert r.returncode == 0, r.stdout + r.stderr
    r_steps = [json.loads(line) for line in (resumed / "metrics.jsonl").read_text().splitlines()]
    r_steps = [x for x in r_steps if not x.get("eval")]
    keys = ("step", "stage", "loss", "grad_norm", "lr", "tokens")
    assert [[x[k] for k in keys] for x in r_steps] == [[x[k] for k in keys] for x in s_steps]
    a, b = load_file(str(straight / "model" / "model.safetensors")), load_file(str(resumed / "model" / "model.safetensors"))
    assert all(torch.equal(a[n], b[n]) for n in a)


def block_losses(setup, count):
    """The initial student's LM loss (transformers) on each of the first `count` training blocks of
    the stream, in the stream's order (block 0 of the .npy is held out)."""
    root, models = setup[0], setup[3]
    ids = torch.from_numpy(np.load(root / "ids.npy").astype(np.int64))
    with torch.no_grad():
        return [models["student"](b.unsqueeze(0), labels=b.unsqueeze(0)).loss.item()
                for b in (ids[CTX * i:CTX * (i + 1)] for i in range(1, count + 1))]


def test_data_shuffle_draws_from_the_buffer_by_seed(setup):
    """With data_shuffle=K each step trains a block drawn from the stream's next K blocks: with an lr
    too small to move fp32 weights, step i's CPT loss is the initial student's loss on its block, so
    the blocks are identified by transformers' losses of the stream's blocks. The draws are distinct,
    the i-th lies within the first i + K - 1 blocks, the seed changes them, and data_shuffle=0 keeps
    the stream's order."""
    steps, k = 12, 5
    common = ("method=cpt", f"steps={steps}", "lr=1e-30", "warmup_steps=0")
    reference = block_losses(setup, steps + k)

    def drawn(*overrides):
        _, records = run(setup, "shuffle", *common, *overrides)
        out = []
        for r in records:
            match = [i for i, loss in enumerate(reference) if loss == pytest.approx(r["loss_lm"], rel=1e-5)]
            assert len(match) == 1, (r, match)
            out.append(match[0])
        return out

    assert drawn() == list(range(steps))
    first = drawn(f"data_shuffle={k}", "seed=1")
    assert len(set(first)) == steps and all(b <= i + k - 1 for i, b in enumerate(first))
    assert first != list(range(steps))
    assert drawn(f"data_shuffle={k}", "seed=1") == first
    assert drawn(f"data_shuffle={k}", "seed=2") != first


def test_curves_plotted_after_the_run(setup, monkeypatch):
    """`linear-ard restore` draws training_curves.png / .svg with scripts/plot.py when it is done."""
    monkeypatch.setenv("LINEAR_ARD_NO_PLOT", "0")
    out, _ = run(setup, "svg", "eval_every=1")
    assert (out / "training_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    root = ET.parse(out / "training_curves.svg").getroot()
    assert root.tag.endswith("svg")
    texts = "".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "loss_q" in texts and "held-out logit_kl" in texts and "held-out attention_kl" in texts


@pytest.mark.parametrize("override,message", [
    ("layers=last:9", "config key 'layers'"),
    ("layers=first", "config key 'layers' must be last:k"),
    ("objective.relations=maps", "config key 'objective.relations'"),
    ("objective.bogus=1", "unknown config key 'objective.bogus'"),
    ("trainable=lora", "config key 'trainable'"),
    ("save_adapters=true", "config key 'save_adapters'"),
    ("method=distill", "config key 'method'"),
    ("data_shuffle=-1", "config key 'data_shuffle' must be >= 0"),
    (f"stage2.ctx_len={CTX * FACTOR * 2}", "config key 'stage2.ctx_len'"),
    ("lora.rank=0", "config key 'lora.rank'"),
])
def test_bad_option_fails_without_output(setup, override, message):
    root, _, config, _, _ = setup
    out = root / f"bad_{abs(hash(override))}"
    extra = ["stage2.steps=1"] if override.startswith("stage2") else []
    r = restore(config, f"output={out}", override, *extra)
    assert r.returncode != 0 and message in r.stderr, r.stderr
    assert not out.exists()


def test_token_ids_beyond_vocab_fail(setup):
    root, _, config, _, _ = setup
    np.save(root / "bad.npy", np.array([1, 2, 5000] * 40, dtype=np.uint16))
    r = restore(config, f"output={root / 'bad_vocab'}", f"data=[{root / 'bad.npy'}]")
    assert r.returncode != 0 and "token id 5000" in r.stderr and "vocab_size 300" in r.stderr, r.stderr
