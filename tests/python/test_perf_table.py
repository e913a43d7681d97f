"""dev/gpu/perf_table.py: the performance figures' one table from a fake gpu_check.sh OUT folder whose files are
laid out as their producers write them (bench_relation_kl_gpu.py's JSON, bench_restore_gpu's printf
tables, bench_step_real.py's results.json); its numbers and met / missed, "not run" rows for missing
files, errors naming a malformed file. Where LINEAR_ARD_BUILD_DIR holds bench_restore_gpu, its --tiny
output checks that the fixture's log layout is the binary's.

    pytest -q tests/python/test_perf_table.py
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "dev" / "gpu"))
import perf_table  # noqa: E402
from script_tool import script_run  # noqa: E402

# bench_relation_kl_gpu.py: (n, ours fwd+bwd ms, SDPA fwd+bwd ms)
OPERATOR = [(1024, 0.40, 0.24), (4096, 1.30, 1.09), (8192, 4.50, 3.63), (16384, 18.0, 13.8), (32768, 108.0, 53.2)]
# bench_restore_gpu runs: (trainable text, checkpoint_layers, [(scope, ctx, step s, peak GiB) or (scope, ctx)=OOM])
RESTORE = [
    ("qkv (fp32 masters, AdamW)", "on", [("last 1", 4096, 0.455, 42.6), ("all 32", 4096, 0.573, 48.9)]),
    ("qkv (fp32 masters, AdamW)", "first 8", [("last 1", 4096, 0.357, 40.2)]),
    ("qkv (fp32 masters, AdamW)", "off", [("last 1", 4096, 0.359, 46.0)]),
    ("lora_qkv r=1024 (fp32 adapters, AdamW)", "on", [("last 1", 4096, 0.500, 24.0), ("all 32", 4096)]),
    ("lora_qkv r=1024 (fp32 adapters, AdamW)", "off", [("last 1", 4096, 0.357, 36.2)]),
]
# bench_step_real.py: (kind, ctx, batch, ours tok/s, PyTorch tok/s, ours MFU, PyTorch MFU)
STEP = [("ard", 2048, 8, 301_000.0, 75_320.0, 0.33, 0.084), ("ard", 4096, 8, 253_263.0, 54_413.0, 0.52, 0.076),
        ("stage2", 32768, 1, 83_457.0, 69_038.0, None, None), ("cpt", 32768, 1, 150_000.0, 70_000.0, 0.55, 0.3)]
LOG_HEAD = ("\n| layers distilled | ctx | step s | tokens/s | peak GiB | paper App. C step s | paper tokens/s "
            "| x paper | authors' code, H200 tokens/s (peak GiB) | target |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n")


def operator_json(path, rows=OPERATOR):
    """bench_relation_kl_gpu.py's results dict (main()'s fields), json.dump'ed as it does."""
    results = {"device": "NVIDIA H100 80GB HBM3", "rows": [], "memory_curve": [], "llama3_8b": []}
    for n, ms, sdpa in rows:
        results["rows"].append(dict(n=n, fwd_ms=ms / 3, bwd_ms=2 * ms / 3, fwd_bwd_ms=ms, tflops=200.0, peak_gib=0.1,
                                    naive_ms=None, naive_gib=None, sdpa_ms=sdpa))
    path.write_text(json.dumps(results, indent=1))


def restore_run(trainable, checkpoint, cases):
    """One bench_restore_gpu run's stdout, its printf formats (the authors' and paper's cells of the
    7B shape's 4K rows; the target cell is not read)."""
    text = (f"bench_restore_gpu: LLaMA-2-7B shape (hidden 4096, 32 layers, 32 heads, ffn 11008, vocab 32000), "
            f"cuda bf16, random weights made in 0.8 s; student PI x8; trainable {trainable}; "
            f"checkpoint_layers {checkpoint}; batch 1; median of 5 steps after 2 warm-up\n" + LOG_HEAD)
    for case in cases:
        scope, ctx = case[:2]
        measured = ("| out of memory | - | - " if len(case) == 2 else
                    "| %.3f | %.0f | %.1f " % (case[2], ctx / case[2], case[3]))
        text += "| %s | %d %s| %.2f | %.1f | %s | %s | %s |\n" % (scope, ctx, measured, 1.56, 2628.1, "3.42x",
                                                                  "2237 (40.4)", "-")
    return text + "\npaper App. C: one RTX PRO 6000 (96 GB), 20-step averages; ...\n"


def step_json(path, rows=STEP):
    """bench_step_real.py's results.json (main()'s row fields)."""
    out = []
    for kind, ctx, batch, ours, peer, ours_mfu, peer_mfu in rows:
        out.append({"kind": kind, "ctx": ctx, "batch": batch, "ours_tok_s": ours, "peer_tok_s": peer,
                    "ours_mfu": ours_mfu, "peer_mfu": peer_mfu, "ours_peak": 6.3 * 2**30, "peer_peak": 9.7 * 2**30,
                    "ours_loss": 0.062032, "peer_loss": 0.062044, "model_flops_per_step": 1e15})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"device": "NVIDIA H100 80GB HBM3", "rows": out, "args": {"steps": 6}}, indent=1))


def out_dir(tmp_path, operator=True, restore=True, step=True):
    if operator:
        operator_json(tmp_path / "bench_relation_kl_gpu.json")
    if restore:
        (tmp_path / "bench_restore.log").write_text("".join(restore_run(*r) for r in RESTORE) + "profile: written\n")
    if step:
        step_json(tmp_path / "step_bench" / "results.json")
    return tmp_path


def table(out):
    """{figure: {column: cell}} of the printed table; asserts it is the last thing printed."""
    r = script_run("dev/gpu/perf_table.py", out)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.rstrip("\n").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| figure"))
    assert all(line.startswith("|") for line in lines[start:])
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in lines[start + 2:]]
    return {row["figure"]: row for row in rows}


LAST1 = "7B restore step, last 1 layer, 4K"


def test_numbers_and_targets(tmp_path):
    rows = table(out_dir(tmp_path))
    for n, ms, sdpa in OPERATOR[2:]:
        row = rows[f"relation KL fwd+bwd, n = {n // 1024}K (B=1 H=32 d=128 bf16)"]
        assert row["ours"] == f"{ms:.3f} ms" and f"{sdpa:.3f} ms" in row["peer"]
        assert row["ours / peer"] == f"{ms / sdpa:.2f}x" and row["target"] == "<= 1.0x SDPA"
        assert row["result"] == "missed"
    assert not any("n = 1K" in f or "n = 4K" in f for f in rows)
    last1 = rows[f"{LAST1} (QKV, recompute)"]
    assert last1["ours"] == f"{4096 / 0.455:,.0f} tok/s"
    assert "2,128 tok/s" in last1["peer"] and "benchmarks/authors" in last1["peer"]
    assert last1["ours / peer"] == f"{round(4096 / 0.455) / 2128:.2f}x" and last1["result"] == "missed"
    peak = rows[f"{LAST1} (QKV, recompute): peak memory"]
    assert peak["ours"] == "42.6 GiB" and peak["target"] == "<= 1x peak" and peak["result"] == "missed"
    partial = rows[f"{LAST1} (QKV, first 8 layers recomputed)"]
    assert partial["ours / peer"] == f"{round(4096 / 0.357) / 2128:.2f}x" and partial["result"] == "met"
    assert rows[f"{LAST1} (QKV, first 8 layers recomputed): peak memory"]["result"] == "met"
    lora = rows[f"{LAST1} (LoRA r1024, recompute): peak memory"]
    assert lora["ours"] == "24.0 GiB" and lora["ours / peer"] == f"{24.0 / 40.4:.2f}x" and lora["result"] == "met"
    assert lora["target"] == "<= 0.6x peak"
    lora_fast = rows[f"{LAST1} (LoRA r1024, no recompute)"]
    assert lora_fast["ours / peer"] == f"{round(4096 / 0.357) / 2128:.2f}x" and lora_fast["result"] == "met"
    assert rows[f"{LAST1} (LoRA r1024, no recompute): peak memory"]["ours"] == "36.2 GiB"
    every = rows["7B restore step, all 32 layers, 4K (QKV, recompute)"]
    assert every["ours / peer"] == f"{round(4096 / 0.573) / 158:.2f}x" and every["target"] == ">= 50x tok/s"
    assert every["result"] == "missed"
    ard = rows["SmolLM2-135M step, ard 2048 x 8"]
    assert ard["ours"] == "301,000 tok/s (MFU 33.0 %)" and ard["peer"].startswith("PyTorch 75,320 tok/s (MFU 8.4 %")
    assert ard["ours / peer"] == f"{301_000 / 75_320:.2f}x" and ard["target"] == ">= 50 % MFU"
    assert ard["result"] == "missed" and rows["SmolLM2-135M step, ard 4096 x 8"]["result"] == "met"
    stage2 = rows["SmolLM2-135M step, stage2 32768 x 1"]
    assert stage2["ours / peer"] == f"{83_457 / 69_038:.2f}x" and stage2["target"] == ">= 50 % MFU, >= 2x PyTorch"
    assert "MFU -" in stage2["ours"] and stage2["result"] == "missed"
    assert rows["SmolLM2-135M step, cpt 32768 x 1"]["result"] == "met"


def test_missed_and_out_of_memory(tmp_path):
    out = out_dir(tmp_path)
    operator_json(out / "bench_relation_kl_gpu.json", [(8192, 3.6, 3.63)])
    step_json(out / "step_bench" / "results.json", [("cpt", 32768, 1, 139_000.0, 70_000.0, 0.6, 0.3)])
    lora_oom = restore_run("lora_qkv r=1024 (fp32 adapters, AdamW)", "on", [("last 1", 4096)])
    (out / "bench_restore.log").write_text(lora_oom)
    rows = table(out)
    assert rows["relation KL fwd+bwd, n = 8K (B=1 H=32 d=128 bf16)"]["result"] == "met"
    assert rows["SmolLM2-135M step, cpt 32768 x 1"]["result"] == "missed"  # 1.99x PyTorch at 60 % MFU
    lora = rows[f"{LAST1} (LoRA r1024, recompute): peak memory"]
    assert lora["ours"] == "out of memory" and lora["result"] == "missed"
    assert rows[f"{LAST1} (QKV, recompute)"]["result"] == "not run"


def test_missing_files_are_not_run(tmp_path):
    rows = table(out_dir(tmp_path, operator=False, restore=False, step=False))
    assert len(rows) == 1 + len(perf_table.RESTORE_ROWS) + 1
    assert all(row["result"] == "not run" for row in rows.values())
    assert "no bench_relation_kl_gpu.json" in rows["relation KL fwd+bwd (B=1 H=32 d=128 bf16)"]["ours"]
    assert "2,128 tok/s" in rows[f"{LAST1} (QKV, recompute)"]["peer"]
    assert rows["SmolLM2-135M step"]["target"] == ">= 50 % MFU"


def test_runs_without_the_target_cases(tmp_path):
    out = out_dir(tmp_path)
    operator_json(out / "bench_relation_kl_gpu.json", OPERATOR[:2])
    step_json(out / "step_bench" / "results.json", [])
    rows = table(out)
    assert rows["relation KL fwd+bwd (B=1 H=32 d=128 bf16)"]["result"] == "not run"
    assert "no n >= 8K" in rows["relation KL fwd+bwd (B=1 H=32 d=128 bf16)"]["ours"]
    assert rows["SmolLM2-135M step"]["result"] == "not run"


@pytest.mark.parametrize("name,text,why", [
    ("bench_relation_kl_gpu.json", "{\"rows\": [", "not JSON"),
    ("bench_relation_kl_gpu.json", json.dumps({"rows": [{"n": 4096, "fwd_bwd_ms": 1.0}]}), "no field 'sdpa_ms'"),
    ("step_bench/results.json", json.dumps({"device": "x"}), "no field 'rows'"),
    ("bench_restore.log", "| last 1 | 4096 | 0.4 |\n", "before any"),
    ("bench_restore.log", restore_run("qkv (fp32 masters, AdamW)", "on", [("last 1", 4096, 0.4, 40.0)])
     .replace("| 4096 |", "| 4K |"), "invalid literal"),
    ("bench_restore.log", restore_run("qkv (fp32 masters, AdamW)", "on", [("last 1", 4096, 0.4, 40.0)])
     .replace("| 1.56 ", ""), "9 cells"),
])
def test_malformed_file_is_named(tmp_path, name, text, why):
    out = out_dir(tmp_path)
    (out / name).write_text(text)
    r = script_run("dev/gpu/perf_table.py", out)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert f"perf_table: {out / name}: malformed" in r.stderr and why in r.stderr, r.stderr


def test_fixture_log_is_the_binary_layout(tmp_path):
    """bench_restore_gpu --tiny's own output: the same column lines as the fixture's, every run and
    row read (the toy shape prints no paper or authors' figures)."""
    binary = Path(os.environ.get("LINEAR_ARD_BUILD_DIR", "/nonexistent")) / "benchmarks" / "bench_restore_gpu"
    if not binary.exists():
        pytest.skip("no bench_restore_gpu under $LINEAR_ARD_BUILD_DIR")
    base = [str(binary), "--tiny", "--steps", "1", "--warmup", "0", "--cases", "last1:32,all:32"]
    text = subprocess.run(base, capture_output=True, text=True, check=True).stdout
    text += subprocess.run(base + ["--no-checkpoint-layers", "--trainable", "lora_qkv", "--lora-rank", "8"],
                           capture_output=True, text=True, check=True).stdout
    assert text.count(LOG_HEAD) == 2
    (tmp_path / "bench_restore.log").write_text(text)
    runs = perf_table.restore_runs(tmp_path / "bench_restore.log")
    assert set(runs) == {("qkv", "on"), ("lora_qkv r=8", "off")}
    for cases in runs.values():
        assert set(cases) == {("last 1", 32), ("all 2", 32)}
        assert all(c["tok_s"] > 0 and c["step_s"] > 0 for c in cases.values())


def test_authors_figures_of_the_same_gpu_model(tmp_path):
    """gpu_check.sh's gpu.txt naming an H200 takes the authors' H200 figures (2,247 / 169 tok/s), else H100."""
    out = out_dir(tmp_path)
    (out / "gpu.txt").write_text("name, clocks.current.sm [MHz], clocks.max.sm [MHz], power.draw [W]\n"
                                 "NVIDIA H200, 1980 MHz, 1980 MHz, 120.5 W\n")
    rows = table(out)
    last1 = rows[f"{LAST1} (QKV, recompute)"]
    assert "2,247 tok/s, authors' trainer, H200" in last1["peer"]
    assert last1["ours / peer"] == f"{round(4096 / 0.455) / 2247:.2f}x"
    every = rows["7B restore step, all 32 layers, 4K (QKV, recompute)"]
    assert "169 tok/s" in every["peer"] and every["ours / peer"] == f"{round(4096 / 0.573) / 169:.2f}x"
    (out / "gpu.txt").write_text("name\nNVIDIA H100 80GB HBM3\n")
    assert "2,128 tok/s, authors' trainer, H100" in table(out)[f"{LAST1} (QKV, recompute)"]["peer"]
