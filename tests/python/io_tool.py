"""Runs tests/io/safetensors_tool (built under $LINEAR_ARD_BUILD_DIR) and checksums tensors the way
it does, so the Python suites can compare the C++ io layer with safetensors and transformers."""

import json
import os
import subprocess
import zlib
from pathlib import Path

import pytest
import torch


def tool_path() -> Path:
    build = os.environ.get("LINEAR_ARD_BUILD_DIR")
    if not build:
        pytest.skip("LINEAR_ARD_BUILD_DIR is not set (scripts/test.sh sets it)")
    path = Path(build) / "tests" / "io" / "safetensors_tool"
    assert path.is_file(), f"{path} is missing: build the safetensors_tool target"
    return path


def tool_run(*args, expect_ok: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(tool_path()), *map(str, args)], capture_output=True, text=True)
    if expect_ok:
        assert result.returncode == 0, result.stderr
    return result


def tool_summary(path) -> dict:
    return json.loads(tool_run("summary", path).stdout)


def tensor_crc32(t: torch.Tensor) -> int:
    return zlib.crc32(t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())


def summary_expect(tensors: dict, summary: dict, dtype_names: dict) -> None:
    """Asserts that the tool's summary lists exactly `tensors` with their dtype, shape and bytes."""
    assert set(summary) == set(tensors)
    for name, t in tensors.items():
        entry = summary[name]
        assert entry["dtype"] == dtype_names[t.dtype], name
        assert entry["shape"] == list(t.shape), name
        assert entry["crc32"] == tensor_crc32(t), name
