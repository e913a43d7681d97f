"""scripts/import_gguf.py for each family llama.cpp's `gguf` describes among ours (llama: LLaMA 1-3.3
and Mistral; qwen2; qwen3; phi3), on tiny random transformers models written as GGUF files by
tests/python/gguf_write.py the way llama.cpp's converter writes them, with the facts transformers'
GGUF loader alone would lose: an explicit head_dim (Qwen3, Mistral-Nemo), LLaMA-3.1's llama3 RoPE
(a rope_freqs tensor, here with low_freq_factor 2 so the importer's normalised fit must give the same
frequencies), Qwen2.5's yarn keys, Phi-3's longrope factor tensors and partial rotary dimension.

The reference is the transformers model the GGUF was written from (F32 weights, imported as fp32):
the imported folder must load in transformers as that family with its logits, and tests/model/model_dump
(our model) must give the same logits from it.
"""

import json
import os
import subprocess
import sys

import gguf
import pytest
import torch
import transformers
from safetensors.torch import load_file

from gguf_write import VOCAB, gguf_from_model
from real_model import ROOT
from test_model_parity import model_dump_path, rel_err

SCRIPT = ROOT / "scripts" / "import_gguf.py"

# name -> (config class, its keys, rope dict, the model_type imported). llama.cpp writes Mistral as
# its llama architecture, which transformers reads as Llama (no window: llama.cpp applies none).
CASES = {
    "llama31": ("LlamaConfig", dict(num_key_value_heads=2, max_position_embeddings=8192),
                dict(rope_type="llama3", rope_theta=1e4, factor=8.0, low_freq_factor=2.0, high_freq_factor=16.0,
                     original_max_position_embeddings=2048), "llama"),
    "mistral_nemo": ("MistralConfig", dict(num_key_value_heads=2, head_dim=24, sliding_window=None), dict(rope_theta=1e6),
                     "llama"),
    "qwen25_yarn": ("Qwen2Config", dict(num_key_value_heads=2, max_position_embeddings=64),
                    dict(rope_type="yarn", rope_theta=1e6, factor=4.0, original_max_position_embeddings=16), "qwen2"),
    "qwen3": ("Qwen3Config", dict(num_key_value_heads=2, head_dim=24), dict(rope_theta=1e6), "qwen3"),
    "phi4_mini": ("Phi3Config", dict(num_key_value_heads=2, max_position_embeddings=64, original_max_position_embeddings=16),
                  dict(rope_type="longrope", rope_theta=1e4, partial_rotary_factor=0.75,
                       short_factor=[1.0 + 0.05 * i for i in range(6)], long_factor=[1.0 + 0.6 * i for i in range(6)]),
                  "phi3"),
}


def tiny_model(case):
    cls_name, extra, rope, _ = CASES[case]
    extra = dict(dict(max_position_embeddings=32), **extra)
    config = getattr(transformers, cls_name)(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, tie_word_embeddings=True, rope_parameters=rope, bos_token_id=None, eos_token_id=None,
        pad_token_id=None, **extra)
    torch.manual_seed(len(case))
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(1 + 0.1 * torch.randn_like(p)) if name.endswith("norm.weight") else p.normal_(0, 0.1)
    return model


@pytest.mark.skipif(not os.path.exists(model_dump_path()), reason="model_dump not built")
@pytest.mark.parametrize("case", list(CASES))
def test_family_gguf_imports_as_the_same_model(case, tmp_path):
    model = tiny_model(case)
    path, out = tmp_path / f"{case}.gguf", tmp_path / "imported"
    gguf_from_model(model, path)
    run = subprocess.run([sys.executable, str(SCRIPT), str(path), str(out), "--dtype", "fp32"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == CASES[case][3]

    ids = torch.randint(0, model.config.vocab_size, (1, 24), generator=torch.Generator().manual_seed(3))
    imported = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    assert imported.config.model_type == CASES[case][3]
    with torch.no_grad():
        ref = model(ids).logits
        assert rel_err(imported(ids).logits, ref) <= 1e-5
    dump = tmp_path / "dump.safetensors"
    subprocess.run([model_dump_path(), str(out), str(dump), "--ids", " ".join(map(str, ids[0].tolist()))], check=True)
    assert rel_err(load_file(dump)["logits"], ref) <= 1e-4


def test_rope_freqs_no_llama3_scaling_gives_is_refused(tmp_path):
    model = tiny_model("llama31")
    path = tmp_path / "odd.gguf"
    gguf_from_model(model, path)
    reader = gguf.GGUFReader(str(path), "r+")
    freqs = next(t for t in reader.tensors if t.name == "rope_freqs.weight")
    freqs.data[:] = [1.0, 3.0, 1.5, 7.0, 8.0, 2.0, 8.0, 8.0]  # not monotone: no band structure
    freqs.data.flush()
    del reader
    run = subprocess.run([sys.executable, str(SCRIPT), str(path), str(tmp_path / "out")], capture_output=True, text=True)
    assert run.returncode == 1
    assert "tensor 'rope_freqs.weight' holds per-pair RoPE divisors that no llama3 scaling gives" in run.stderr
    assert not (tmp_path / "out").exists()
