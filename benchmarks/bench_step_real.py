#!/usr/bin/env python3
"""The restore training step on a real model (SmolLM2-135M by default), ours beside plain PyTorch.

For each case, one process of `linear-ard restore` (its own metrics: the median step time after the
warm-up steps) and the same step written in plain PyTorch on the same GPU, same ids, same trainable
set and objective:

- teacher and student are transformers' LlamaForCausalLM with SDPA attention (student PI x factor),
  frozen weights in the model dtype, trainable tensors as fp32 masters under torch.autocast (the
  trainer's fp32 masters cast to the model dtype), torch.optim.AdamW(fused=True), clipping by
  torch.nn.utils.clip_grad_norm_ (foreach);
- `ard` (stage 1): the final layer's post-RoPE Q/Q, K/K, V/V relation KL, densely (n x n
  materialised, fp32, in head chunks under torch.utils.checkpoint so 4K+ fits), both forwards
  stopped after the final layer's QKV (as ours); Q/K/V of every layer trainable;
- `stage2` / `cpt_qkv`: next-token loss of the student, Q/K/V of every layer trainable;
- `cpt`: next-token loss, every tensor trainable.

Each side's first-step loss is printed beside the other's: the two compute the same objective on
the same block, so they agree to the model dtype's precision (a check that the peer is this step).
Our LM loss (stage2, cpt_qkv, cpt) runs the LM head chunked with the cross-entropy
(model/lm_head_loss.h: no [n, vocab] logits), the peer materialises the logits as transformers does
(bf16, then fp32 for the loss); the table gives our peak memory as a fraction of the peer's, and for
the long-context LM cases (n >= 16K) the targets: at least 2x the peer's tokens/s and at most 0.7x
its peak memory (`bench_lm_loss` times the loss alone).

MFU = model FLOPs / (step time x the GPU's dense bf16 peak); model FLOPs per token count the
matmuls (2 x parameters used, lm_head included where the logits are computed) and causal attention
(2 x n x d_q per layer forward), backward = 2 x forward for the layers gradients pass through; the
relation KL's own FLOPs are left out (both sides compute it, in different ways).

    python benchmarks/bench_step_real.py --cli build-gpu/src/cli/linear-ard [--model DIR]
        [--cases ard:4096:8,stage2:32768:1,cpt:32768:1] [--steps 6] [--warmup 2] [--out DIR]
    --tiny: the bundled 3.7M-parameter model on the CPU, short blocks (a smoke run; figures mean nothing)
    --random-weights: --model's config and tokenizer with weights drawn at random (same shapes, so the
        same step time), for a GPU machine the real weights have not reached

A benchmark, not a test: it prints a table last (markdown) and writes it with the raw figures as JSON.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12}


class _Stop(Exception):
    """Raised after the final layer's QKV is captured: nothing after it enters the ARD loss."""


def parse_cases(text):
    cases = []
    for item in text.split(","):
        kind, ctx, batch = item.split(":")
        if kind not in ("ard", "stage2", "cpt_qkv", "cpt"):
            raise SystemExit(f"--cases: unknown kind {kind!r} (ard, stage2, cpt_qkv, cpt)")
        cases.append({"kind": kind, "ctx": int(ctx), "batch": int(batch)})
    return cases


# ---- the peer: plain PyTorch ------------------------------------------------------------------------

def load_pair(model_dir, factor, dtype, device):
    from transformers import AutoConfig, AutoModelForCausalLM
    teacher = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation="sdpa").to(device)
    config = AutoConfig.from_pretrained(model_dir)
    config.rope_parameters = {**config.rope_parameters, "rope_type": "linear", "factor": float(factor)}
    config.max_position_embeddings = config.max_position_embeddings * factor
    student = AutoModelForCausalLM.from_pretrained(model_dir, config=config, dtype=dtype,
                                                   attn_implementation="sdpa").to(device)
    teacher.eval().requires_grad_(False)
    student.train()
    return teacher, student


def trainables(student, kind):
    student.requires_grad_(False)
    names = []
    for name, p in student.named_parameters():
        if kind == "cpt" or any(f"self_attn.{x}_proj." in name for x in "qkv"):
            p.data = p.data.float()  # the fp32 master; autocast casts it in each matmul
            p.requires_grad_(True)
            names.append(name)
    return [p for p in student.parameters() if p.requires_grad]


def install_capture(last_layer):
    """Replaces transformers' "sdpa" attention by one that keeps the final layer's post-RoPE q, k, v
    (k, v before GQA's repeat) in `captured` and stops the forward there when `stop` is set."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    state = {"captured": None, "stop": False}

    def attention(module, q, k, v, *args, **kwargs):
        if state["stop"] and module.layer_idx == last_layer:
            state["captured"] = (q, k, v)
            raise _Stop()
        return sdpa_attention_forward(module, q, k, v, *args, **kwargs)

    ALL_ATTENTION_FUNCTIONS["sdpa"] = attention
    return state


def final_qkv(model, ids, state):
    state["stop"], state["captured"] = True, None
    try:
        model(input_ids=ids, use_cache=False)
    except _Stop:
        pass
    finally:
        state["stop"] = False
    return state["captured"]


def _relation_kl_rows(xs, xt):
    """Sum over rows of the causal self-relation KL, dense in fp32: the project's one dense oracle."""
    sys.path.insert(0, str(ROOT / "tests" / "python"))
    from relation_kl_dense import relation_kl_dense
    kl, _, _ = relation_kl_dense(xs.unsqueeze(1), None, xt.unsqueeze(1), None, causal=True,
                                 dtype=torch.float32, device=xs.device)
    return kl.sum()


def relation_loss_dense(student, teacher, chunk):
    """The trainer's loss: sum over Q, K, V of the mean row KL (rows, heads, batch)."""
    from torch.utils.checkpoint import checkpoint
    total = 0.0
    for xs, xt in zip(student, teacher):
        b, h, n, d = xs.shape
        xs, xt = xs.reshape(b * h, n, d), xt.reshape(b * h, n, d)
        acc = 0.0
        for i in range(0, b * h, chunk):
            acc = acc + checkpoint(_relation_kl_rows, xs[i:i + chunk], xt[i:i + chunk], use_reentrant=False)
        total = total + acc / (b * h * n)
    return total


def peer_step(case, teacher, student, params, optimizer, ids, state, dtype, device):
    autocast = torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)
    optimizer.zero_grad(set_to_none=True)
    with autocast:
        if case["kind"] == "ard":
            with torch.no_grad():
                qkv_t = final_qkv(teacher, ids, state)
            qkv_s = final_qkv(student, ids, state)
            loss = relation_loss_dense(qkv_s, qkv_t, chunk=8)
        else:
            logits = student(input_ids=ids, use_cache=False).logits
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, logits.shape[-1]),
                                                     ids[:, 1:].reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 5.0)
    optimizer.step()
    return loss.detach()


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run_peer(case, args, blocks, device, dtype):
    teacher, student = load_pair(args.model, args.factor, dtype, device)
    state = install_capture(student.config.num_hidden_layers - 1)
    params = trainables(student, case["kind"])
    optimizer = torch.optim.AdamW(params, lr=1e-5, weight_decay=0.0, fused=device.type == "cuda")
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times, first_loss = [], None
    for step in range(args.warmup + args.steps):
        ids = torch.from_numpy(blocks[step]).long().to(device)
        sync(device)
        t0 = time.perf_counter()
        loss = peer_step(case, teacher, student, params, optimizer, ids, state, dtype, device)
        sync(device)
        times.append(time.perf_counter() - t0)
        if first_loss is None:
            first_loss = float(loss)
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    del teacher, student, optimizer
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return {"step_s": statistics.median(times[args.warmup:]), "first_loss": first_loss, "peak_bytes": peak}


# ---- ours: `linear-ard restore` ----------------------------------------------------------------------

def run_ours(case, args, npy, workdir):
    kind = case["kind"]
    out = Path(workdir) / f"ours_{kind}_{case['ctx']}"
    settings = [f"teacher={args.model}", f"data=[{npy}]", f"output={out}", f"ctx_len={case['ctx']}",
                f"batch_size={case['batch']}", "grad_accum=1", f"steps={args.warmup + args.steps + args.profile_steps}",
                "lr=1e-5", "warmup_steps=0", "stage2.steps=0", "stage2.warmup_steps=0", "eval_every=0",
                "log_every=1000", "weight_decay=0", "clip_grad_norm=5.0", "layers=last:1",
                # The steps alone are timed, on the peer's blocks: the file's order after the one
                # validation block held out (block 0), no passkey, the last step's weights.
                "data_shuffle=0", "val_blocks=1", "val_passkey.samples=0",
                "select.criterion=last",
                f"student_rope.factor={args.factor}", "dtype=auto" if not args.tiny else "dtype=fp32"]
    if kind == "ard":
        settings += ["method=ard", "trainable=qkv"]
    else:
        settings += ["method=cpt", "trainable=" + ("full" if kind == "cpt" else "qkv")]
    if args.profile_steps:
        settings += [f"profile_steps={args.profile_steps}"]
    settings += args.ours_set
    cmd = [args.cli, "restore", str(ROOT / "configs" / "smollm2_pi4.yaml"), *settings]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ours failed ({' '.join(cmd)}):\n{r.stdout}\n{r.stderr}")
    steps = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in steps if "step_time_s" in s]
    # The profiled steps (2..1+profile_steps) synchronize at every phase: left out with the warm-up.
    profiled = range(2, 2 + args.profile_steps)
    times = [s["step_time_s"] for s in steps if s["step"] > args.warmup and s["step"] not in profiled]
    return {"step_s": statistics.median(times), "first_loss": steps[0]["loss"],
            "peak_bytes": max(s.get("peak_memory_bytes", 0) for s in steps), "folder": str(out)}


# ---- FLOPs, table ------------------------------------------------------------------------------------

def model_flops_per_token(config, case):
    d, L = config["hidden_size"], config["num_hidden_layers"]
    heads, kv = config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"])
    hd = config.get("head_dim") or d // heads
    dq, dkv, ff, vocab, n = heads * hd, kv * hd, config["intermediate_size"], config["vocab_size"], case["ctx"]
    qkv = 2 * d * (dq + 2 * dkv)
    layer = qkv + 2 * dq * d + 2 * 3 * d * ff + 2 * n * dq
    if case["kind"] == "ard":  # teacher and student stop after the final layer's QKV; backward through all
        forward = (L - 1) * layer + qkv
        return 2 * forward + 2 * forward
    forward = L * layer + 2 * d * vocab
    return forward + 2 * forward


def peak_flops(device):
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((v for k, v in PEAK_BF16.items() if k in name), None)


def lm_target(r):
    """The long-context LM cases' targets (>= 2x the peer's speed, <= 0.7x its peak memory): met / not met,
    or "-" for the other cases."""
    if r["kind"] == "ard" or r["ctx"] < 16384:
        return "–"
    speed = r["ours_tok_s"] / r["peer_tok_s"] >= 2.0
    memory = r["peer_peak"] > 0 and r["ours_peak"] <= 0.7 * r["peer_peak"]
    return ("met" if speed and memory else "not met") + f" (speed {'ok' if speed else 'no'}, memory {'ok' if memory else 'no'})"


def table(rows, device_name):
    lines = [f"Restore step on {device_name}: ours (`linear-ard restore`) beside plain PyTorch (transformers + SDPA, same step)", "",
             "| case | ctx x batch | ours tok/s | ours MFU | PyTorch tok/s | PyTorch MFU | speed-up | ours peak GiB | PyTorch peak GiB | memory ours / PyTorch | target (>= 2x, <= 0.7x memory) | first loss ours / PyTorch |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        mfu = lambda x: f"{100 * x:.1f} %" if x is not None else "–"
        memory = f"{r['ours_peak'] / r['peer_peak']:.2f}x" if r["peer_peak"] else "–"
        lines.append(f"| {r['kind']} | {r['ctx']} x {r['batch']} | {r['ours_tok_s']:,.0f} | {mfu(r['ours_mfu'])} | "
                     f"{r['peer_tok_s']:,.0f} | {mfu(r['peer_mfu'])} | {r['ours_tok_s'] / r['peer_tok_s']:.2f}x | "
                     f"{r['ours_peak'] / 2**30:.2f} | {r['peer_peak'] / 2**30:.2f} | {memory} | {lm_target(r)} | "
                     f"{r['ours_loss']:.5g} / {r['peer_loss']:.5g} |")
    return "\n".join(lines)


def random_copy(model_dir, out):
    """out/random_model: model_dir's config and tokenizer files with weights from transformers' own
    initialisation (seed 0), saved by transformers in the config's dtype. Written under a temporary
    name and renamed; reused when it exists."""
    import shutil
    from transformers import AutoConfig, AutoModelForCausalLM
    dst = out / "random_model"
    if (dst / "config.json").exists():
        return str(dst)
    tmp = out / "random_model.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_config(config, dtype=getattr(config, "dtype", None) or torch.bfloat16)
    model.save_pretrained(tmp)
    for name in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (Path(model_dir) / name).exists():
            shutil.copy(Path(model_dir) / name, tmp / name)
    tmp.rename(dst)
    return str(dst)


def default_model(args):
    if args.tiny:
        return str(ROOT / "models" / "demo")
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_gguf.py"), "--default-model"],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip().splitlines()[-1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cli", default=str(ROOT / "build" / "src" / "cli" / "linear-ard"))
    p.add_argument("--model", help="HF folder (default: the imported SmolLM2-135M-Instruct)")
    p.add_argument("--cases", default="ard:4096:8,stage2:32768:1,cpt:32768:1", help="kind:ctx:batch,...")
    p.add_argument("--factor", type=int, default=4, help="PI factor of the student")
    p.add_argument("--steps", type=int, default=6, help="timed steps (median)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--profile-steps", type=int, default=0, help="also write our profile/ (train/step_profile.h)")
    p.add_argument("--ours-set", action="append", default=[], metavar="KEY=VALUE",
                   help="one more `linear-ard restore` setting for our side (repeatable), e.g. overlap_teacher=true")
    p.add_argument("--out", default=None, help="folder for table.md, results.json and our runs")
    p.add_argument("--tiny", action="store_true", help="bundled 3.7M model on the CPU (smoke run)")
    p.add_argument("--random-weights", action="store_true",
                   help="--model's config and tokenizer, random weights (timings only)")
    args = p.parse_args()
    if args.tiny and args.cases == p.get_default("cases"):
        args.cases = "ard:64:2,stage2:128:1,cpt:128:1"
    args.model = args.model or default_model(args)
    cases = parse_cases(args.cases)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    config = json.loads((Path(args.model) / "config.json").read_text())
    out = Path(args.out or tempfile.mkdtemp(prefix="bench_step_real_"))
    out.mkdir(parents=True, exist_ok=True)
    if args.random_weights:
        args.model = random_copy(args.model, out)
    rng = np.random.default_rng(0)
    rows = []
    for case in cases:
        n_blocks = 1 + (args.warmup + args.steps + args.profile_steps) * case["batch"]  # ours holds block 0 out
        ids = rng.integers(0, config["vocab_size"], size=(n_blocks * case["ctx"],), dtype=np.uint32)
        npy = out / f"ids_{case['kind']}_{case['ctx']}.npy"
        np.save(npy, ids)
        blocks = ids.reshape(n_blocks, case["ctx"])[1:].reshape(-1, case["batch"], case["ctx"])  # ours' batches
        print(f"bench_step_real: {case['kind']} ctx {case['ctx']} x batch {case['batch']}: ours ...", flush=True)
        ours = run_ours(case, args, npy, out)
        print(f"bench_step_real: {case['kind']} ctx {case['ctx']} x batch {case['batch']}: PyTorch ...", flush=True)
        peer = run_peer(case, args, blocks, device, dtype)
        tokens = case["ctx"] * case["batch"]
        flops = model_flops_per_token(config, case) * tokens
        peak = peak_flops(device)
        rows.append({**case, "ours_tok_s": tokens / ours["step_s"], "peer_tok_s": tokens / peer["step_s"],
                     "ours_mfu": flops / ours["step_s"] / peak if peak else None,
                     "peer_mfu": flops / peer["step_s"] / peak if peak else None,
                     "ours_peak": ours["peak_bytes"], "peer_peak": peer["peak_bytes"],
                     "ours_loss": ours["first_loss"], "peer_loss": peer["first_loss"],
                     "model_flops_per_step": flops})
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (smoke run)"
    text = table(rows, device_name)
    (out / "table.md").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps({"device": device_name, "rows": rows, "args": vars(args)}, indent=1))
    print(text)


if __name__ == "__main__":
    main()
