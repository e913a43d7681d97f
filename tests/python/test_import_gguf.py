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
from pathlib import Path

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


# ---- reliability: a corrupt or truncated GGUF, an output location that cannot take the folder.
# Each failure is one line `import_gguf: error: ...` naming the problem, exit status 1 (2 for
# usage), no traceback, nothing left where the folder would go; the location is checked before
# anything is dequantized.


@pytest.fixture(scope="module")
def one_layer(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "one_layer.gguf"
    derived_gguf(path, layers=1)
    return path.read_bytes()


def header_counts(data, tensors=None, keys=None):
    """The GGUF bytes with the header's tensor count and/or metadata key count replaced."""
    import struct
    n_tensors, n_keys = struct.unpack("<QQ", data[8:24])
    return data[:8] + struct.pack("<QQ", n_tensors if tensors is None else tensors,
                                  n_keys if keys is None else keys) + data[24:]


BROKEN_GGUF = {
    "tensor_count_one_more": (lambda d: header_counts(d, tensors=12), "12 tensors", "is corrupt"),
    "tensor_count_huge": (lambda d: header_counts(d, tensors=2**40), "1099511627776 tensors", "is corrupt"),
    "tensor_count_fewer": (lambda d: header_counts(d, tensors=5), "follow the data of the 5 tensors",
                           "tensor count is wrong"),
    "metadata_count_more": (lambda d: header_counts(d, keys=40), "40 metadata keys", "is corrupt"),
    "truncated_in_header": (lambda d: d[:5000], "(5000 bytes) is truncated", "GGUF"),
    "truncated_in_data": (lambda d: d[:len(d) // 2], "is truncated", "cannot reshape"),
    "truncated_last_tensor": (lambda d: d[:-1000], "is truncated", "cannot reshape"),
    "no_magic": (lambda d: b"GGUX" + d[4:], "no GGUF magic", "GGUF"),
    "empty": (lambda d: b"", "0 bytes", "GGUF"),
}


def fails_in_one_line(run, out, *messages):
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    errors = [l for l in run.stderr.splitlines() if l.startswith("import_gguf: error:")]
    assert len(errors) == 1, run.stderr
    for m in messages:
        assert m in errors[0], errors[0]
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if ".tmp." in p.name], list(out.parent.iterdir())


@pytest.mark.parametrize("case", list(BROKEN_GGUF))
def test_broken_gguf_is_one_line_naming_the_problem(case, one_layer, tmp_path):
    edit, *messages = BROKEN_GGUF[case]
    path = tmp_path / f"{case}.gguf"
    path.write_bytes(edit(one_layer))
    out = tmp_path / "out"
    fails_in_one_line(run_import(path, out), out, str(path), *messages)


def test_output_under_a_file_is_refused_before_dequantizing(one_layer, tmp_path):
    path = tmp_path / "ok.gguf"
    path.write_bytes(one_layer)
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "out"
    run = run_import(path, out)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert "is not a folder" in run.stderr and "dequantizing" not in run.stderr, run.stderr
    (tmp_path / "plain").write_text("x")
    run = subprocess.run([sys.executable, str(SCRIPT), str(path), str(tmp_path / "plain"), "--force"],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "plain: exists and is not a folder" in run.stderr, run.stderr
    assert (tmp_path / "plain").read_text() == "x"


def test_usage_errors_exit_2(tmp_path):
    for args in ([], [str(tmp_path / "a.gguf")], ["--dtype", "fp8", "a.gguf", "out"]):
        run = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
        assert run.returncode == 2 and "Traceback" not in run.stderr, (args, run.stderr)


@pytest.fixture
def importer(monkeypatch):
    """The script as a module, its dequantizing replaced by a failure: the tests below must stop
    before it."""
    import importlib.util
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # the script imports its neighbour gguf_config.py
    spec = importlib.util.spec_from_file_location("import_gguf_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def never(*_):
        raise AssertionError("dequantized before checking the output location")
    monkeypatch.setattr(module, "load_dequantized", never)
    return module


def test_full_output_location_is_refused_before_dequantizing(importer, one_layer, tmp_path, monkeypatch, capsys):
    import collections
    path = tmp_path / "ok.gguf"
    path.write_bytes(one_layer)
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(importer.shutil, "disk_usage", lambda p: usage(10 << 30, 10 << 30, 1 << 20))
    assert importer.main([str(path), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "writes about" in err and "1 MiB free" in err, err
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.tmp.*"))


def test_read_only_output_location_is_refused_before_dequantizing(importer, one_layer, tmp_path, monkeypatch, capsys):
    import errno
    path = tmp_path / "ok.gguf"
    path.write_bytes(one_layer)
    real_mkdir = importer.Path.mkdir

    def read_only(self, *args, **kwargs):  # what a read-only mount answers (root included)
        if self.name.startswith(".out.tmp."):
            raise PermissionError(errno.EROFS, "Read-only file system", str(self))
        return real_mkdir(self, *args, **kwargs)
    monkeypatch.setattr(importer.Path, "mkdir", read_only)
    assert importer.main([str(path), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"cannot write in {tmp_path}: Read-only file system" in err, err
    assert not (tmp_path / "out").exists()


def test_disk_full_while_writing_leaves_nothing(importer, one_layer, tmp_path, monkeypatch, capsys):
    import errno
    path = tmp_path / "ok.gguf"
    path.write_bytes(one_layer)
    monkeypatch.setattr(importer, "load_dequantized", lambda path, dtype, arch: (None, None))

    def full(model, tokenizer, out):
        (Path(out) / "model.safetensors").write_bytes(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(importer, "write_folder", full)
    assert importer.main([str(path), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "writing the folder failed: OSError" in err and "No space left on device" in err, err
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.tmp.*"))
