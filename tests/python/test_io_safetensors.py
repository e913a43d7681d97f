"""The C++ safetensors reader/writer against the PyPI safetensors library, both directions, every
dtype: we read what it writes (same bits), it reads what we write (same bits, same bytes)."""

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from io_tool import summary_expect, tool_run, tool_summary

DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool, "U16": torch.uint16, "U32": torch.uint32, "U64": torch.uint64,
    "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2,
    "F8_E4M3FNUZ": torch.float8_e4m3fnuz, "F8_E5M2FNUZ": torch.float8_e5m2fnuz, "C64": torch.complex64,
}
NAMES = {dtype: name for name, dtype in DTYPES.items()}


def tensor_random(dtype: torch.dtype, shape, gen: torch.Generator) -> torch.Tensor:
    """Random bit patterns of `dtype` (NaNs and subnormals included) so nothing is value-converted."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    size = torch.empty((), dtype=dtype).element_size()
    numel = 1
    for d in shape:
        numel *= d
    return torch.randint(0, 256, (numel * size,), dtype=torch.uint8, generator=gen).view(dtype).reshape(shape)


def sample(dtypes, seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for name in dtypes:
        for suffix, shape in (("matrix", (7, 3)), ("scalar", ()), ("empty", (0, 5)), ("odd", (13,))):
            out[f"{name.lower()}.{suffix}"] = tensor_random(DTYPES[name], shape, gen)
    return out


def bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


def test_every_dtype_both_ways(tmp_path):
    for name in DTYPES:
        tensors = sample([name])
        theirs = tmp_path / f"{name}.theirs.safetensors"
        ours = tmp_path / f"{name}.ours.safetensors"
        save_file(tensors, str(theirs), metadata={"format": "pt"})
        summary = tool_summary(theirs)
        assert summary["metadata"] == {"format": "pt"}
        summary_expect(tensors, summary["tensors"], NAMES)
        tool_run("copy", theirs, ours)
        back = load_file(str(ours))
        assert set(back) == set(tensors)
        for key, t in tensors.items():
            assert bits_equal(back[key], t), key
        assert ours.read_bytes() == theirs.read_bytes(), name


def test_mixed_dtypes_byte_identical(tmp_path):
    tensors = sample(DTYPES, seed=1)
    theirs, ours = tmp_path / "theirs.safetensors", tmp_path / "ours.safetensors"
    save_file(tensors, str(theirs), metadata={"format": "pt"})
    summary_expect(tensors, tool_summary(theirs)["tensors"], NAMES)
    tool_run("copy", theirs, ours)
    assert ours.read_bytes() == theirs.read_bytes()


def test_metadata_and_non_contiguous_input(tmp_path):
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    tensors = {"t": base.t().contiguous(), "s": base[:, 1:8:3].contiguous(), "ünï.cödé": torch.ones(2)}
    theirs, ours = tmp_path / "theirs.safetensors", tmp_path / "ours.safetensors"
    metadata = {"format": "pt", "note": "héllo", "b": ""}
    save_file(tensors, str(theirs), metadata=metadata)
    assert tool_summary(theirs)["metadata"] == metadata
    tool_run("copy", theirs, ours)
    with safe_open(str(ours), "pt") as f:
        assert f.metadata() == metadata
        for key in tensors:
            assert torch.equal(f.get_tensor(key), tensors[key])


def test_errors_reach_python_with_the_problem_named(tmp_path):
    good = tmp_path / "good.safetensors"
    save_file({"a": torch.ones(4)}, str(good))
    data = good.read_bytes()
    truncated = tmp_path / "truncated.safetensors"
    truncated.write_bytes(data[:-1])
    result = tool_run("summary", truncated, expect_ok=False)
    assert result.returncode == 1
    assert f"safetensors file {truncated}: tensor 'a': data_offsets [0, 16] reach beyond the end" in result.stderr
    trailing = tmp_path / "trailing.safetensors"
    trailing.write_bytes(data + b"\0")
    assert "1 trailing bytes" in tool_run("summary", trailing, expect_ok=False).stderr
