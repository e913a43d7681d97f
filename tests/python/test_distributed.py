"""Multi-process runs (docs/multi-gpu.md) on CPU with gloo, against the single-process run.

Two ranks with batch_size=1 must train like one process with batch_size=2 (same global batch, same
seed, same blocks: rank r reads blocks r, r + 2, ...): per-step loss, gradient norm and final weights
agree within fp32 rounding, tokens count G = 2, and only rank 0 writes. A 1-process run with
batch_size=1 (another global batch) is the negative control: it must differ by far more than the
tolerance. Eval (ppl, tasks, passkey, ruler, compare) split over 2 ranks must give one process's scores.

    LINEAR_ARD_BUILD_DIR=$PWD/build-dist pytest -q tests/python/test_distributed.py
"""

import json
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch  # noqa: F401  (safetensors.torch needs it)
import transformers
import yaml
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_teacher  # noqa: E402
from test_restore import binary  # noqa: E402

CTX, STEPS = 32, 4
# fp32 tolerance: the two runs do the same arithmetic in another order (one forward of 2 blocks vs
# two forwards of 1; the batch mean vs the mean over ranks of gloo's sum), so they differ by rounding:
# a few ulps (1.2e-7 relative) per reduction, carried through 4 AdamW steps whose update m/sqrt(v) is
# insensitive to a common relative error of the gradient. 2e-5 relative leaves ~100x headroom over
# that and is ~1000x below the difference between the two global batches (checked below).
RTOL = 2e-5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(nproc, *args, timeout=240):
    """`torchrun --no-python --nproc-per-node N linear-ard ...` from this Python environment."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--no-python", f"--nproc-per-node={nproc}",
           f"--master-port={free_port()}", "--master-addr=127.0.0.1", str(binary()), *map(str, args)]
    env = dict(os.environ, OMP_NUM_THREADS="1", LINEAR_ARD_DIST_TIMEOUT="60")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def by_hand(per_rank_args, timeout=240, extra_env=None):
    """Ranks started with the env:// variables set by hand (rank 0 serves the TCPStore)."""
    port = free_port()
    procs = []
    for rank, args in enumerate(per_rank_args):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(len(per_rank_args)),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1",
                   LINEAR_ARD_DIST_TIMEOUT="60", **(extra_env or {}))
        procs.append(subprocess.Popen([str(binary()), *map(str, args)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=env))
    outs = [p.communicate(timeout=timeout) for p in procs]
    return [(p.returncode, o, e) for p, (o, e) in zip(procs, outs)]


def single(*args):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("WORLD_SIZE", None)
    return subprocess.run([str(binary()), *map(str, args)], capture_output=True, text=True, timeout=240, env=env)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("distributed")
    rng = random.Random(3)
    words = "the model restores relation attention query key value rope scaled student teacher".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(20, 40))) + "." for _ in range(60)]
    teacher = tiny_teacher.teacher_make(root / "teacher", texts, hidden=32, intermediate=64, layers=2,
                                        heads=4, kv_heads=2, max_positions=CTX * 4, vocab_size=300,
                                        qk_std=0.15, seed=0)
    tok = transformers.AutoTokenizer.from_pretrained(str(teacher))
    ids = [i for t in texts for i in tok(t)["input_ids"] + [tok.eos_token_id]]
    np.save(root / "ids.npy", np.array(ids, dtype=np.uint16))
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump({
        "teacher": str(teacher), "student_rope": {"rope_type": "linear", "factor": 4},
        "data": [str(root / "ids.npy")], "ctx_len": CTX, "steps": STEPS, "lr": 1e-3, "device": "cpu",
        "dtype": "fp32", "log_every": 10, "trainable": "lora_all", "clip_grad_norm": 0.5,
        # The last step's weights are written: the tests compare what training did on each rank,
        # not which validation the selection keeps (a tiny run's step 0 may have the lowest KL).
        "select": {"criterion": "last"}}))
    (root / "text.txt").write_text("\n\n".join(texts[:30]))
    return root, teacher, config


def steps_of(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()
            if not json.loads(line).get("eval")]


def assert_close(a, b, what):
    assert abs(a - b) <= RTOL * max(abs(a), abs(b), 1e-3), f"{what}: {a} vs {b}"


@pytest.fixture(scope="module")
def runs(setup):
    root, _, config = setup
    ref = single("restore", config, f"output={root / 'single'}", "batch_size=2")
    assert ref.returncode == 0, ref.stdout + ref.stderr
    other = single("restore", config, f"output={root / 'single_b1'}", "batch_size=1")
    assert other.returncode == 0, other.stdout + other.stderr
    # First half by hand, each rank with its own output folder: rank 1's must never appear.
    half = by_hand([["restore", config, f"output={root / 'dist'}", "batch_size=1", "stop_after_step=2"],
                    ["restore", config, f"output={root / 'rank1'}", "batch_size=1", "stop_after_step=2"]])
    for rank, (rc, out, err) in enumerate(half):
        assert rc == 0, f"rank {rank}: {out}\n{err}"
    assert half[1][1] == "", "rank 1 printed on stdout"
    # Second half through torchrun (its agent serves the store), resuming rank 0's checkpoint.
    rest = torchrun(2, "restore", config, f"output={root / 'dist'}", "batch_size=1", "resume=true")
    assert rest.returncode == 0, rest.stdout + rest.stderr
    return root


def test_loss_curve_and_weights_match_single_process(runs):
    ref, dist, other = steps_of(runs / "single"), steps_of(runs / "dist"), steps_of(runs / "single_b1")
    assert [r["step"] for r in dist] == list(range(1, STEPS + 1)) == [r["step"] for r in ref]
    for r, d in zip(ref, dist):
        for key in ("loss", "loss_q", "loss_k", "loss_v", "grad_norm"):
            assert_close(r[key], d[key], f"step {r['step']} {key}")
    # The control (global batch 1) is far away: the comparison above can fail.
    assert max(abs(r["loss"] - o["loss"]) / abs(r["loss"]) for r, o in zip(ref[1:], other[1:])) > 100 * RTOL
    a = load_file(str(runs / "single" / "model" / "model.safetensors"))
    b = load_file(str(runs / "dist" / "model" / "model.safetensors"))
    teacher = load_file(str(runs / "teacher" / "model.safetensors"))
    moved = 0
    for name in a:
        delta = (a[name] - teacher[name]).abs().max().item()
        err = (a[name] - b[name]).abs().max().item()
        assert err <= RTOL * max(delta, 1e-6) * 10 + 1e-7, f"{name}: max |single - dist| {err} (moved {delta})"
        moved += delta > 0
    assert moved > 0


def test_cpt_full_model_matches_single_process(setup):
    """CPT (next-token loss, every tensor trainable) on 2 ranks x batch 1 against 1 process x batch 2."""
    root, _, config = setup
    args = ["restore", config, "method=cpt", "trainable=full", "steps=4"]
    ref = single(*args, f"output={root / 'cpt_single'}", "batch_size=2")
    assert ref.returncode == 0, ref.stdout + ref.stderr
    dist = torchrun(2, *args, f"output={root / 'cpt_dist'}", "batch_size=1")
    assert dist.returncode == 0, dist.stdout + dist.stderr
    a, b = steps_of(root / "cpt_single"), steps_of(root / "cpt_dist")
    assert [r["step"] for r in a] == [r["step"] for r in b] == [1, 2, 3, 4]
    for r, d in zip(a, b):
        for key in ("loss", "grad_norm"):
            assert_close(r[key], d[key], f"cpt step {r['step']} {key}")
        assert r["tokens"] == d["tokens"]


def test_token_accounting_counts_both_ranks(runs):
    dist = steps_of(runs / "dist")
    assert [r["tokens"] for r in dist] == [CTX * 1 * 1 * 2 * k for k in range(1, STEPS + 1)]
    assert [r["tokens"] for r in dist] == [r["tokens"] for r in steps_of(runs / "single")]
    stage = json.loads((runs / "dist" / "training_summary.json").read_text())["token_budget"]["stages"][0]
    assert (stage["L"], stage["B"], stage["A"], stage["U"], stage["G"]) == (CTX, 1, 1, STEPS, 2)
    assert stage["tokens"] == CTX * STEPS * 2


def test_only_rank0_writes(runs):
    assert not (runs / "rank1").exists()
    names = sorted(p.name for p in (runs / "dist").iterdir())
    assert "model" in names and "metrics.jsonl" in names and not [n for n in names if n.endswith(".tmp")]


def test_resume_with_another_world_size_fails(runs, setup):
    _, _, config = setup
    r = single("restore", config, f"output={runs / 'dist'}", "batch_size=1", "resume=true")
    assert r.returncode != 0
    assert "written by a run of 2 process(es) and this run has 1" in r.stderr


def test_dead_rank_stops_the_other(setup):
    """Rank 1 is killed mid-run: rank 0 must stop with an error naming it, within the timeout."""
    root, _, config = setup
    port = free_port()
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), LINEAR_ARD_DIST_TIMEOUT="20", OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([str(binary()), "restore", str(config), f"output={root / 'dead'}",
                                       "steps=100000", "log_every=1", "overwrite=true"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    try:
        deadline = time.time() + 90
        for line in procs[0].stdout:  # rank 0 flushes every progress line
            if line.startswith("step 3/") or time.time() > deadline:
                break
        procs[1].kill()
        killed = time.time()
        _, err = procs[0].communicate(timeout=20 + 40)
        took = time.time() - killed
    finally:
        for p in procs:
            p.kill()
    assert procs[0].returncode != 0 and took < 60, (procs[0].returncode, took)
    assert "rank 0 of 2" in err and "failed" in err, err


def eval_json(out_stem):
    return json.loads(Path(str(out_stem) + ".json").read_text())


def test_eval_split_matches_one_process(setup):
    root, teacher, _ = setup
    rng = random.Random(5)
    words = "the model restores relation attention query key value".split()
    with open(root / "mc.jsonl", "w") as f:
        for i in range(7):
            choices = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in range(3)]
            f.write(json.dumps({"context": " ".join(rng.choice(words) for _ in range(8)), "choices": choices,
                                "gold": i % 3}) + "\n")
    commands = {
        "ppl": ["ppl", teacher, "--text", root / "text.txt", "--ctx", "32", "48", "--batch-size", "1"],
        "tasks": ["tasks", teacher, "--tasks", root / "mc.jsonl", "--batch-size", "1"],
        "passkey": ["passkey", teacher, "--lengths", "260", "320", "--depths", "0", "0.5", "1", "--max-new-tokens", "4"],
        # 9 samples (odd: rank 0 gets 5), tasks with different answer lengths.
        "ruler": ["ruler", teacher, "--lengths", "520", "--tasks", "niah_single_1", "vt", "fwe", "--samples", "3"],
        "compare": ["compare", teacher, teacher, "--names", "a", "b", "--text", root / "text.txt", "--ctx", "32",
                    "--passkey-lengths", "260", "--passkey-depths", "0.5", "--passkey-samples", "3",
                    "--ruler-lengths", "520", "--ruler-tasks", "niah_single_1", "--ruler-samples", "3"],
    }
    for name, args in commands.items():
        base = ["eval", *args, "--device", "cpu", "--dtype", "fp32"]
        # tasks also logs every request and its score (compared below).
        stem = lambda tag: (["--output_path", root / f"{name}_{tag}_logs", "--log_samples"]  # noqa: E731
                            if name == "tasks" else [])
        one = single(*base, *stem("1"), "-o", root / f"{name}_1")
        assert one.returncode == 0, one.stdout + one.stderr
        two = by_hand([[*base, *stem("2"), "-o", root / f"{name}_2"],
                       [*base, *stem("2_rank1"), "-o", root / f"{name}_2_rank1"]])
        for rank, (rc, out, err) in enumerate(two):
            assert rc == 0, f"{name} rank {rank}: {out}\n{err}"
        assert not Path(str(root / f"{name}_2_rank1") + ".json").exists()
        a, b = eval_json(root / f"{name}_1"), eval_json(root / f"{name}_2")
        if name == "ppl":
            for x, y in zip(a["results"], b["results"]):
                assert (x["tokens"], x["windows"]) == (y["tokens"], y["windows"])
                assert x["nll"] == y["nll"], (x["nll"], y["nll"])  # same windows, batch 1: same arithmetic
        elif name == "tasks":
            assert a["n-samples"]["mc"]["effective"] == b["n-samples"]["mc"]["effective"] == 7
            for k in ("acc,none", "acc_norm,none"):
                assert a["results"]["mc"][k] == b["results"]["mc"][k]
            ra, rb = ([json.loads(x) for f in (root / f"tasks_{tag}_logs").glob("*/samples_mc_*.jsonl")
                       for x in f.read_text().splitlines()] for tag in ("1", "2"))
            assert len(ra) == 7 and [x["filtered_resps"] for x in ra] == [x["filtered_resps"] for x in rb]
            assert not (root / "tasks_2_rank1_logs").exists()
        elif name == "passkey":
            assert [r["output_ids"] for r in a["rows"]] == [r["output_ids"] for r in b["rows"]]
            assert [r["accuracy"] for r in a["rows"]] == [r["accuracy"] for r in b["rows"]]
        elif name == "ruler":
            assert len(a["samples"]) == 9
            # Each rank generated only its own samples (5 and 4 of 9), yet both scored all 9.
            assert "[ruler] 5/5 " in two[0][2] and "[ruler] 4/4 " in two[1][2], (two[0][2], two[1][2])
            assert ruler_outcome(a) == ruler_outcome(b)
        else:
            assert [m["name"] for m in b["models"]] == ["a", "b"]
            for x, y in zip(a["models"], b["models"]):
                assert x["ppl"][0]["nll"] == y["ppl"][0]["nll"]
                assert [r["output_ids"] for r in x["passkey"]["rows"]] == [r["output_ids"] for r in y["passkey"]["rows"]]
                assert ruler_outcome(x["ruler"]) == ruler_outcome(y["ruler"])


def ruler_outcome(report):
    """What a RULER run decided (not its timings): each sample's prompt, output ids and score."""
    samples = [(s["task"], s["length"], s["index"], s["prompt"], s["output_ids"], s["score"]) for s in report["samples"]]
    return samples, report["scores"], report["prefill_tokens"], report["decode_tokens"]
