"""scripts/import_gguf.py on GGUF files derived here from the real SmolLM2 GGUF with llama.cpp's
`gguf` package: the first two layers, re-quantized to other tensor types (F16, BF16, Q8_0, Q4_0,
Q5_1; K-quants have no quantizer in gguf-py, only the dequantizer the import uses), and broken
variants whose import must fail naming the problem, leaving no output folder.

The reference for values is gguf's own dequantize of the derived file: the imported weights must
equal it (rounded to bf16), for tensors the conversion does not permute (Q/K are permuted back from
llama.cpp's layout by transformers, and are checked through the model's outputs instead).
"""

import json
import subprocess
import sys

import gguf
import numpy as np
import pytest
import torch
import transformers
from gguf import GGMLQuantizationType as T
from safetensors.torch import load_file

from real_model import ROOT
from gguf_derive import derived_gguf

SCRIPT = ROOT / "scripts" / "import_gguf.py"


def run_import(src, out):
    return subprocess.run([sys.executable, str(SCRIPT), str(src), str(out)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def mixed_types(tmp_path_factory):
    """A 2-layer model whose matrices cycle through F16, BF16, Q8_0, Q4_0, Q5_1 (embedding F16,
    norms F32 as llama.cpp writes them)."""
    cycle = [T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q5_1]

    def types(i, name):
        if name == "token_embd.weight":
            return T.F16
        return None if "norm" in name else cycle[i % 5]

    path = tmp_path_factory.mktemp("gguf") / "mixed.gguf"
    derived_gguf(path, layers=2, types=types)
    out = path.parent / "mixed_hf"
    run = run_import(path, out)
    assert run.returncode == 0, run.stderr[-3000:]
    return path, out


def test_mixed_types_import_equals_gguf_dequantize(mixed_types):
    path, out = mixed_types
    weights = load_file(out / "model.safetensors")
    reader = gguf.GGUFReader(str(path))
    seen = {t.tensor_type for t in reader.tensors}
    assert {T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q5_1, T.F32} <= seen
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight"}
    for layer in range(2):
        for ours, theirs in (("attn_v", "self_attn.v_proj"), ("attn_output", "self_attn.o_proj"),
                             ("ffn_gate", "mlp.gate_proj"), ("ffn_up", "mlp.up_proj"),
                             ("ffn_down", "mlp.down_proj"), ("attn_norm", "input_layernorm")):
            names[f"blk.{layer}.{ours}.weight"] = f"model.layers.{layer}.{theirs}.weight"
    for t in reader.tensors:
        if t.name not in names:
            continue
        ref = torch.from_numpy(np.array(gguf.quants.dequantize(t.data, t.tensor_type)))
        got = weights[names[t.name]]
        assert got.dtype == torch.bfloat16
        assert torch.equal(got, ref.reshape(got.shape).to(torch.bfloat16)), t.name


def test_mixed_types_loads_in_transformers_like_the_gguf(mixed_types):
    """The imported folder gives the logits transformers gets from the GGUF itself."""
    path, out = mixed_types
    ids = torch.tensor([[504, 3575, 282, 4649, 314, 28, 216, 40, 36, 41]])
    direct = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                               dtype=torch.float32)
    imported = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    with torch.no_grad():
        a = direct(ids).logits
        b = imported(ids).logits
    # The import stores bf16: compare with the GGUF's weights rounded the same way.
    assert ((a - b).norm() / a.norm()).item() < 2e-2
    assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 2


def test_unsupported_architecture_is_named(tmp_path):
    path = tmp_path / "gemma.gguf"
    derived_gguf(path, layers=1, arch="gemma2")
    run = run_import(path, tmp_path / "out")
    assert run.returncode == 1
    assert "architecture 'gemma2' cannot be imported (supported: llama, mistral, qwen2, qwen3, phi3)" in run.stderr
    assert not (tmp_path / "out").exists()


def test_undequantizable_tensor_type_is_named(tmp_path):
    path = tmp_path / "f64.gguf"
    derived_gguf(path, layers=1, types=lambda i, name: T.F64 if name == "blk.0.ffn_up.weight" else None)
    run = run_import(path, tmp_path / "out")
    assert run.returncode == 1
    assert "tensor 'blk.0.ffn_up.weight' has GGML type F64, which cannot be dequantized" in run.stderr
    assert not (tmp_path / "out").exists()


def test_missing_weight_is_named(tmp_path):
    path = tmp_path / "missing.gguf"
    derived_gguf(path, layers=1, drop={"blk.0.ffn_down.weight"})
    run = run_import(path, tmp_path / "out")
    assert run.returncode == 1
    assert "lacks 1 weight(s) the model needs, e.g. model.layers.0.mlp.down_proj.weight" in run.stderr
    assert not (tmp_path / "out").exists()


def test_not_a_gguf_file_and_existing_output(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf at all" * 10)
    run = run_import(bad, tmp_path / "out")
    assert run.returncode == 1 and "not a readable GGUF file" in run.stderr
    (tmp_path / "exists").mkdir()
    run = run_import(bad, tmp_path / "exists")
    assert run.returncode == 1 and "already exists (use --force" in run.stderr
