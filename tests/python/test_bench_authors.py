"""benchmarks/authors/bench_authors.py on a stand-in for the authors' checkout: a dense PyTorch
attn_kl_align (the one dense oracle) at their import path, timed on the CPU beside our operator; the
agreement check, a broken checkout and bad arguments."""

import os
import subprocess
import sys

from script_tool import ROOT

SCRIPT = ROOT / "benchmarks" / "authors" / "bench_authors.py"

# Their entry point's signature over the dense oracle; FACTOR scales the loss (1: the same
# computation as ours; else a wrong one the agreement check must catch).
STAND_IN = """
import torch
from relation_kl_dense import relation_kl_dense

def attn_kl_align(qs, ks, qt, kt, attn_mask=None, causal=True, sm_scale_s=None, sm_scale_t=None):
    kl, _, _ = relation_kl_dense(qs, ks, qt, kt, key_mask=attn_mask, causal=causal, scale_s=sm_scale_s,
                                 scale_t=sm_scale_t, dtype=torch.float64)
    return {factor} * kl.sum().float()
"""


def checkout(tmp_path, factor=1):
    entry = tmp_path / "authors" / "kernels" / "attention_KL"
    entry.mkdir(parents=True)
    (entry / "integration.py").write_text(STAND_IN.format(factor=factor))
    return tmp_path / "authors"


def run(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests" / "python"))
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=env)


def test_table_beside_ours_on_the_stand_in(tmp_path):
    r = run("--repo", checkout(tmp_path), "--device", "cpu", "--dtype", "fp32", "--sizes", "17,64",
            "--heads", "2", "--dim", "8", "--iters", "2", "--warmup", "1", "--with-ours")
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| ")]
    assert rows[0] == "| n | authors' ms | useful TFLOP/s | ours ms | authors' / ours |"
    assert [row.split(" | ")[0] for row in rows[1:]] == ["| 17", "| 64"]
    assert all(float(row.split(" | ")[1]) > 0 and row.endswith("x |") for row in rows[1:])


def test_a_different_loss_is_refused(tmp_path):
    r = run("--repo", checkout(tmp_path, factor=2), "--device", "cpu", "--dtype", "fp32", "--sizes", "33",
            "--heads", "2", "--dim", "8", "--iters", "1", "--warmup", "0", "--with-ours")
    assert r.returncode == 1
    assert r.stderr.strip().startswith("bench_authors: n = 33: the losses differ")
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_folder_that_is_not_their_checkout(tmp_path):
    r = run("--repo", tmp_path, "--device", "cpu")
    assert r.returncode == 1
    assert r.stderr.strip() == f"bench_authors: {tmp_path / 'kernels/attention_KL/integration.py'}: not found " \
                               "(--repo must be a checkout of the authors' repository)"


def test_bad_sizes_are_a_usage_error(tmp_path):
    r = run("--repo", tmp_path, "--sizes", "4096,x")
    assert r.returncode == 2
    assert "--sizes: not a comma-separated list of integers" in r.stderr
