"""The Python API (python/linear_ard/api.py): docs/python.md's example runs as written (from the
repository root, through the build's binary) and what it returns is what the run wrote; a failing
run raises RunError with the command's one error line.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_python_api.py
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from test_eval import binary

ROOT = Path(__file__).resolve().parents[2]


def example(out, text):
    """docs/python.md's example writing to `out`, scoring `text` instead of the whole held-out file
    (the API is what is tested here, not 30 s of perplexity)."""
    doc = (ROOT / "docs" / "python.md").read_text()
    block = re.search(r"## Example\n.*?```python\n(.*?)```", doc, re.S).group(1)
    assert "build/python-demo" in block and "data/demo/heldout.jsonl" in block
    return block.replace("build/python-demo", str(out)).replace("data/demo/heldout.jsonl", str(text))


def test_docs_example_runs_and_returns_the_runs_files(tmp_path):
    binary()
    out, text = tmp_path / "demo", tmp_path / "heldout.txt"
    text.write_text((ROOT / "data" / "demo" / "heldout.jsonl").read_text()[:4000])
    code = example(out, text) + (
        "import json, sys\n"
        "json.dump({'model': str(run.model), 'metrics': run.metrics, 'config': run.config, 'ppl': ppl},"
        " open(sys.argv[1], 'w'))\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "got.json")], cwd=ROOT, capture_output=True,
                       text=True, timeout=600, env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "python")})
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads((tmp_path / "got.json").read_text())
    assert got["model"] == str(out / "model") and (out / "model" / "config.json").is_file()
    assert got["metrics"] == [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in got["metrics"] if not m.get("eval")] == [1, 2, 3, 4]
    assert got["config"] == yaml.safe_load((out / "resolved_config.yaml").read_text())
    assert got["config"]["steps"] == 4 and got["config"]["tensorboard"] is False
    assert got["ppl"]["results"][0]["ctx_len"] == 256 and got["ppl"]["results"][0]["ppl"] > 1


def test_failed_run_raises_run_error_with_the_error_line(tmp_path, monkeypatch):
    monkeypatch.setenv("LINEAR_ARD_BINARY", str(binary()))
    sys.path.insert(0, str(ROOT / "python"))
    import linear_ard
    with pytest.raises(linear_ard.RunError, match="config key 'steps'"):
        linear_ard.restore({"teacher": str(ROOT / "models" / "demo"), "student_rope": {"rope_type": "linear",
                            "factor": 2}, "data": [str(ROOT / "data" / "demo" / "restore.jsonl")],
                            "output": str(tmp_path / "o")}, steps=-1)


def test_tune_returns_its_report_and_a_second_call_resumes(tmp_path, monkeypatch):
    """Two trials of two steps on the demo model, no final run: the dict returned is tune.json, and
    the same call again (its config written to another temporary file) reads the trials back."""
    monkeypatch.setenv("LINEAR_ARD_BINARY", str(binary()))
    sys.path.insert(0, str(ROOT / "python"))
    import linear_ard
    config = {"teacher": str(ROOT / "models" / "demo"), "student_rope": {"rope_type": "linear", "factor": 8},
              "data": [str(ROOT / "data" / "demo" / "restore.jsonl")], "ctx_len": 64, "steps": 4,
              "val_blocks": 2, "val_ctx_len": 128, "val_passkey": {"samples": 0}, "device": "cpu", "dtype": "fp32",
              "tensorboard": False, "output": str(tmp_path / "tune")}
    got = linear_ard.tune(config, {"lr": [1e-4, 3e-3]}, trial_fraction=0.5, final=False)
    assert got == json.loads((tmp_path / "tune" / "tune.json").read_text())
    assert [t["settings"] for t in got["trials"]] == [["lr=0.0001"], ["lr=0.003"]]
    assert got["winner"] in (0, 1) and "final" not in got
    metrics = tmp_path / "tune" / "trials" / "trial-00" / "metrics.jsonl"
    stamp = metrics.stat().st_mtime_ns
    again = linear_ard.tune(config, {"lr": [1e-4, 3e-3]}, trial_fraction=0.5, final=False)
    assert again["winner"] == got["winner"] and metrics.stat().st_mtime_ns == stamp
    # A budget of 512 tokens: the full run 512 / 64 = 8 steps (batch 1), each trial half of those.
    one_stage = dict(config, output=str(tmp_path / "tune_budget"), batch_size=1, grad_accum=1, stage2={"steps": 0})
    budgeted = linear_ard.tune(one_stage, {"lr": [1e-4]}, trial_fraction=0.5, final=False, budget="0.512K")
    assert budgeted["budget"]["asked"] == 512 and budgeted["budget"]["full_run_tokens"] == [512]
    assert [t["tokens"] for t in budgeted["trials"]] == [256]
