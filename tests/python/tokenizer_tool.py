"""Drives <build>/tests/io/tokenizer_tool (found through LINEAR_ARD_BUILD_DIR, which scripts/test.sh
sets) and compares its answers with a reference: ids and decoded text of whole tokenizers, or the
output of single pipeline stages (normalizer, pre-tokenizer, decoder) built from the same spec."""

import json
import os
import subprocess
from pathlib import Path

import pytest


def tool_path() -> Path:
    build = os.environ.get("LINEAR_ARD_BUILD_DIR")
    if not build:
        pytest.skip("LINEAR_ARD_BUILD_DIR is not set (scripts/test.sh sets it to the build folder)")
    tool = Path(build) / "tests" / "io" / "tokenizer_tool"
    if not tool.exists():
        pytest.fail(f"{tool} is missing: build the target tokenizer_tool")
    return tool


def run_tool(folder: Path, requests: list, tmp_path: Path) -> list:
    """One tool run for many requests: {"text", "add_special_tokens"} encodes (reply: ids or the
    error message), {"ids", "skip_special_tokens"} decodes (reply: text)."""
    src, dst = tmp_path / "requests.jsonl", tmp_path / "replies.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in requests))
    subprocess.run([str(tool_path()), str(folder), "batch", str(src), str(dst)], check=True)
    # Only "\n" ends a line: texts may hold U+2028 and friends, which str.splitlines also splits at.
    replies = [json.loads(line) for line in dst.read_text().split("\n") if line]
    assert len(replies) == len(requests)
    return [r["ids"] if "ids" in r else r["text"] if "text" in r else "ERROR: " + r["error"] for r in replies]


def encode_requests(texts, add_special_tokens):
    return [{"text": t, "add_special_tokens": add_special_tokens} for t in texts]


def decode_requests(id_lists, skip_special_tokens):
    return [{"ids": i, "skip_special_tokens": skip_special_tokens} for i in id_lists]


def _shown(value, at: int):
    """`value` whole when short, else the part around index `at`."""
    if len(repr(value)) <= 400:
        return repr(value)
    return f"[{at}:] " + repr(value[max(at - 8, 0):at + 24])


def _first_difference(a, b) -> int:
    if isinstance(a, (str, list)) and isinstance(b, (str, list)):
        return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return 0


def assert_same(what, texts, ours, theirs):
    """Reports the first few inputs whose results differ (long ones around the first difference)."""
    bad = [(t, o, h, _first_difference(o, h)) for t, o, h in zip(texts, ours, theirs) if o != h]
    report = "\n".join(f"  {_shown(t, 0)}\n    ours: {_shown(o, k)}\n    HF:   {_shown(h, k)}" for t, o, h, k in bad[:5])
    assert not bad, f"{what}: {len(bad)} of {len(texts)} strings differ, first ones:\n{report}"


def compare(what, folder, texts, ids_with, ids_without, decode, tmp_path):
    """Checks in one tool run our ids with and without special tokens against `ids_with` and
    `ids_without`, and our decoding of `ids_with` against decode(ids, skip_special_tokens)."""
    n = len(texts)
    requests = encode_requests(texts, True) + encode_requests(texts, False)
    requests += decode_requests(ids_with, False) + decode_requests(ids_with, True)
    ours = run_tool(folder, requests, tmp_path)
    assert_same(f"{what} ids", texts, ours[:n], ids_with)
    assert_same(f"{what} ids without special tokens", texts, ours[n:2 * n], ids_without)
    for k, skip in ((2, False), (3, True)):
        assert_same(f"{what} decode(skip_special_tokens={skip})", texts, ours[k * n:(k + 1) * n],
                    [decode(i, skip) for i in ids_with])


def run_components(requests: list, tmp_path: Path) -> list:
    """One tool run over single-stage requests ({"normalizer", "text"}, {"pre_tokenizer", "text"},
    {"decoder", "tokens"}); replies are the text, the list of pieces, or "ERROR: " + the message."""
    src, dst = tmp_path / "components.jsonl", tmp_path / "components_replies.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in requests))
    subprocess.run([str(tool_path()), "components", str(src), str(dst)], check=True)
    replies = [json.loads(line) for line in dst.read_text().split("\n") if line]
    assert len(replies) == len(requests)
    return [r["pieces"] if "pieces" in r else r["text"] if "text" in r else "ERROR: " + r["error"] for r in replies]


def check_against_tokenizers(folder: Path, texts: list, tmp_path: Path):
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(folder / "tokenizer.json"))
    compare(folder.name, folder, texts, [hf.encode(t).ids for t in texts],
            [hf.encode(t, add_special_tokens=False).ids for t in texts],
            lambda ids, skip: hf.decode(ids, skip_special_tokens=skip), tmp_path)
