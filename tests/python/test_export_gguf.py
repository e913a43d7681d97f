"""`linear-ard export-gguf` (scripts/export_gguf.py, llama.cpp's `gguf` writer): the file reads back
with gguf.GGUFReader (architecture, context length, the RoPE scaling keys llama.cpp reads, tensor
types, tokenizer), imports again with scripts/import_gguf.py, and the imported model gives the
logits of the original whose matrices went through the same type (gguf's own quantize/dequantize:
bf16 and q8_0; f16 by numpy), to fp32 noise: on the demo model (SentencePiece, tied embeddings) and
on tiny random LLaMA and Qwen2 students (byte-level BPE, scaled RoPE, Qwen2's q/k/v biases), with
300 tokens so that positions past the native length are used. Same tokenizer ids on plain text.
Refusals are one line: a RoPE type llama.cpp has no keys for, an existing output. Every file is
written by the binary; the importer runs in this process (its command line runs in real_model.py's default-model
import), which saves a transformers start-up per case.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_export_gguf.py
"""

import importlib.util
import json
import random
import shutil
import subprocess
import sys

import gguf
import numpy as np
import pytest
import torch
import transformers
from gguf import GGMLQuantizationType as T

import tiny_teacher
from real_model import ROOT
from test_eval import binary

TEXT = "The model restores its relations; the student reads 12 positions, then 345 more. é"
GGML = {"bf16": T.BF16, "f16": T.F16, "q8_0": T.Q8_0}
sys.path.insert(0, str(ROOT / "scripts"))  # import_gguf.py imports gguf_config.py beside it
_spec = importlib.util.spec_from_file_location("import_gguf", ROOT / "scripts" / "import_gguf.py")
import_gguf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_gguf)


def student(root, arch, rope):
    """A tiny random model of `arch` with scaled `rope`, saved with the tiny BPE tokenizer."""
    rng = random.Random(0)
    texts = [" ".join(rng.choice("the model restores its relation to the student reads".split()) for _ in range(20))
             for _ in range(30)]
    folder = root / arch
    tok = tiny_teacher.tokenizer_train(texts, 300, folder)
    kw = dict(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=96, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
              bos_token_id=tok.token_to_id("<s>"), eos_token_id=tok.token_to_id("</s>"), tie_word_embeddings=False,
              rope_parameters=dict(rope, rope_theta=10000.0))
    config = transformers.LlamaConfig(**kw) if arch == "llama" else transformers.Qwen2Config(**kw)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.2)
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("export")
    return {"demo": ROOT / "models" / "demo",
            "llama": student(root, "llama", {"rope_type": "linear", "factor": 2.0}),
            "qwen2": student(root, "qwen2", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128,
                                             "beta_fast": 16.0})}


def export(model, out, kind, *extra):
    return subprocess.run([str(binary()), "export-gguf", str(model), str(out), "--type", kind, *extra],
                          capture_output=True, text=True, timeout=300)


def through(w, kind):
    """What a matrix becomes in a GGUF of `kind` and back, by gguf's own code."""
    w = w.float().numpy()
    if kind == "f16":
        return torch.from_numpy(w.astype(np.float16).astype(np.float32))
    if kind == "q8_0" and w.shape[-1] % 32:
        return torch.from_numpy(w.astype(np.float16).astype(np.float32))
    q = gguf.quants.quantize(w, GGML[kind])
    return torch.from_numpy(gguf.quants.dequantize(q, GGML[kind]).reshape(w.shape).astype(np.float32))


def logits(model, ids):
    with torch.no_grad():
        return model(ids).logits


@pytest.mark.parametrize("name", ["demo", "llama", "qwen2"])
@pytest.mark.parametrize("kind", ["bf16", "f16", "q8_0"])
def test_round_trip(models, tmp_path, name, kind):
    folder = models[name]
    out = tmp_path / "m.gguf"
    r = export(folder, out, kind)
    assert r.returncode == 0, r.stderr
    reader = gguf.GGUFReader(str(out))
    arch = reader.fields["general.architecture"].contents()
    config = json.loads((folder / "config.json").read_text())
    assert arch == ("qwen2" if name == "qwen2" else "llama")
    assert reader.fields[f"{arch}.context_length"].contents() == config["max_position_embeddings"]
    rope = config.get("rope_parameters") or {}
    if rope.get("rope_type", "default") != "default":
        assert reader.fields[f"{arch}.rope.scaling.type"].contents() == rope["rope_type"]
        assert reader.fields[f"{arch}.rope.scaling.factor"].contents() == rope["factor"]
    matrices = [t for t in reader.tensors if len(t.shape) == 2]
    assert matrices and all(t.tensor_type == GGML[kind] for t in matrices if t.shape[0] % 32 == 0)
    assert reader.fields["tokenizer.ggml.model"].contents() == ("llama" if name == "demo" else "gpt2")

    imported = tmp_path / "imported"
    import_gguf.import_gguf(out, imported, "float32")
    theirs = transformers.AutoModelForCausalLM.from_pretrained(str(imported), dtype=torch.float32).eval()
    if rope.get("factor"):
        assert theirs.config.rope_parameters == dict(rope, rope_theta=10000.0)
    ref = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).eval()
    with torch.no_grad():
        for pname, p in ref.named_parameters():
            if p.ndim == 2:
                p.copy_(through(p, kind))
    tok_ref, tok_theirs = (transformers.AutoTokenizer.from_pretrained(str(f)) for f in (folder, imported))
    assert tok_theirs(TEXT)["input_ids"] == tok_ref(TEXT)["input_ids"]
    ids = torch.randint(3, config["vocab_size"], (1, 300), generator=torch.Generator().manual_seed(0))
    want, got = logits(ref, ids), logits(theirs, ids)
    assert (got - want).abs().max().item() < 1e-3 * want.abs().max().item()


def test_refusals_are_one_line(models, tmp_path):
    dynamic = tmp_path / "dynamic"
    shutil.copytree(models["llama"], dynamic)
    config = json.loads((dynamic / "config.json").read_text())
    config["rope_parameters"] = {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}
    (dynamic / "config.json").write_text(json.dumps(config))
    r = export(dynamic, tmp_path / "d.gguf", "bf16")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "RoPE type 'dynamic'" in r.stderr, r.stderr
    assert not (tmp_path / "d.gguf").exists()
    (tmp_path / "x.gguf").write_text("")
    r = export(models["llama"], tmp_path / "x.gguf", "bf16")
    assert r.returncode == 1 and "already exists" in r.stderr
    r = export(models["llama"], tmp_path / "y.gguf", "q4_0")
    assert r.returncode == 2
