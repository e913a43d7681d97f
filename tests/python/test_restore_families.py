"""`linear-ard restore` end to end on the families beyond Llama, with teachers already RoPE-scaled:
a Qwen3 teacher with yarn (per-head q/k norms, explicit head_dim) extended by yarn, and a Phi-3
teacher with longrope (fused qkv_proj / gate_up_proj, partial rotary dimension) extended by
longrope with LoRA adapters.

What a user gets back must be that family, as transformers loads it: model/ as the teacher's class
with config.json's RoPE the one docs/rope.md composes and, for Phi-3, the fused tensors stored fused
(the same tensor names as the teacher's files); our forward on model/ (model_dump) equal to
transformers'; Phi-3's PEFT adapters (fused: one adapter on qkv_proj and on gate_up_proj) loading
with AutoPeftModelForCausalLM on scaled/ to the merged model/'s logits.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_restore_families.py
"""

import json
import shutil
import subprocess

import peft
import pytest
import torch
import transformers
import yaml
from safetensors.torch import load_file

from test_model_parity import model_dump_path, rel_err
from test_restore import restore
from test_restore_options import CTX, setup  # noqa: F401  (its tokenizer, token ids and batch)

HALF = 6  # Phi-3's rotated pairs: head_dim 16 x partial_rotary_factor 0.75 / 2

TEACHERS = {
    "qwen3": (transformers.Qwen3Config, dict(head_dim=24, max_position_embeddings=CTX,
                                             rope_parameters=dict(rope_type="yarn", rope_theta=1e4, factor=2.0,
                                                                  original_max_position_embeddings=CTX // 2))),
    "phi3": (transformers.Phi3Config, dict(max_position_embeddings=CTX, original_max_position_embeddings=CTX // 2,
                                           rope_parameters=dict(rope_type="longrope", rope_theta=1e4, partial_rotary_factor=0.75,
                                                                short_factor=[1.0 + 0.1 * i for i in range(HALF)],
                                                                long_factor=[1.5 + 0.5 * i for i in range(HALF)]))),
}


@pytest.fixture(scope="module")
def corpus(setup):  # noqa: F811
    """test_restore_options' folder (its ids.npy), tiny teacher (its tokenizer) and a training batch."""
    root, llama_teacher, _, _, batch = setup
    return root, llama_teacher, batch


def teacher_make(root, llama_teacher, family):
    """A random teacher of `family` with the tiny Llama teacher's tokenizer."""
    cls, keys = TEACHERS[family]
    folder = root / f"teacher_{family}"
    tok = transformers.AutoTokenizer.from_pretrained(str(llama_teacher))
    config = cls(vocab_size=len(tok), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, bos_token_id=tok.bos_token_id,
                 eos_token_id=tok.eos_token_id, pad_token_id=None, tie_word_embeddings=False, **keys)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "proj" in name:
                p.normal_(0.0, 0.15)
    model.save_pretrained(str(folder))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(llama_teacher / name, folder / name)
    return folder


def run_restore(root, teacher, name, student_rope, *overrides):
    config = root / f"{name}.yaml"
    config.write_text(yaml.safe_dump({
        "teacher": str(teacher), "student_rope": student_rope, "data": [str(root / "ids.npy")], "ctx_len": CTX,
        "steps": 3, "lr": 1e-2, "device": "cpu", "dtype": "fp32", "log_every": 10, "output": str(root / name)}))
    r = restore(config, *overrides)
    assert r.returncode == 0, r.stdout + r.stderr
    return root / name


def check_model_folder(out, teacher, batch):
    """model/ loads as the teacher's class with the teacher's tensor names, and our forward on it is
    transformers'; returns transformers' logits."""
    model = transformers.AutoModelForCausalLM.from_pretrained(str(out / "model")).eval()
    native = transformers.AutoModelForCausalLM.from_pretrained(str(teacher))
    assert type(model) is type(native)
    assert set(load_file(str(out / "model" / "model.safetensors"))) == set(load_file(str(teacher / "model.safetensors")))
    dump = out / "dump.safetensors"
    subprocess.run([model_dump_path(), str(out / "model"), str(dump), "--ids", " ".join(map(str, batch[0].tolist()))],
                   check=True)
    with torch.no_grad():
        logits = model(batch).logits
    assert rel_err(load_file(str(dump))["logits"], logits) <= 1e-4
    return logits


def test_qwen3_yarn_teacher_extended_by_yarn(corpus):
    root, llama_teacher, batch = corpus
    teacher = teacher_make(root, llama_teacher, "qwen3")
    out = run_restore(root, teacher, "qwen3_out", {"rope_type": "yarn", "factor": 2.0})
    config = json.loads((out / "model" / "config.json").read_text())
    # docs/rope.md: the teacher's factor 2 times 2 over its original 16 positions, 64 in all.
    assert config["rope_parameters"]["factor"] == 4.0
    assert config["rope_parameters"]["original_max_position_embeddings"] == CTX // 2
    assert config["max_position_embeddings"] == 2 * CTX
    check_model_folder(out, teacher, batch)


def test_phi3_longrope_teacher_extended_with_lora_adapters(corpus):
    root, llama_teacher, batch = corpus
    teacher = teacher_make(root, llama_teacher, "phi3")
    out = run_restore(root, teacher, "phi3_out", {"rope_type": "longrope", "factor": 2.0}, "trainable=lora_all",
                      "save_adapters=true", "lora.rank=4", "lora.alpha=8")
    config = json.loads((out / "model" / "config.json").read_text())
    assert config["rope_parameters"]["long_factor"] == pytest.approx([2 * (1.5 + 0.5 * i) for i in range(HALF)])
    assert config["original_max_position_embeddings"] == CTX // 2
    merged = check_model_folder(out, teacher, batch)

    adapters = json.loads((out / "adapters" / "adapter_config.json").read_text())
    assert sorted(adapters["target_modules"]) == ["down_proj", "gate_up_proj", "o_proj", "qkv_proj"]
    assert adapters["rank_pattern"] == {"qkv_proj": 12, "gate_up_proj": 8}
    model = peft.AutoPeftModelForCausalLM.from_pretrained(str(out / "adapters")).eval()
    scaled = transformers.AutoModelForCausalLM.from_pretrained(str(out / "scaled")).eval()
    with torch.no_grad():
        peft_logits, base_logits = model(batch).logits, scaled(batch).logits
    assert (merged - base_logits).abs().max() > 1e-3  # the adapters were trained
    torch.testing.assert_close(peft_logits, merged, rtol=1e-5, atol=1e-5)
