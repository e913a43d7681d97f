#!/usr/bin/env python3
"""`linear-ard eval` against HF transformers on random small LLaMA models (MHA; GQA with linear RoPE
scaling x4): every per-request loglikelihood of `eval tasks`, and every greedy token of `eval
passkey` / `eval ruler`, then RULER's prefill / decode tokens/s.

    tests/gpu/check_eval_transformers.py --build build-gpu                 # CUDA, bf16
    tests/gpu/check_eval_transformers.py --build build-eval --device cpu  # CPU, fp32

Tolerances. fp32: loglikelihoods within 1e-4 of transformers' fp32 (summed over a few tokens), greedy
flags equal. bf16 (FlashAttention's rule): the error of ours against transformers in fp64 may be at
most twice transformers' own bf16 error against its fp64 (plus 1e-3 for near-zero errors), per
request. Greedy tokens: at every generated step our token's fp64 logit must be within the tie
tolerance of the fp64 maximum; the tolerance is 1e-4 in fp32 and, in bf16, twice the largest gap
between transformers' bf16 and fp64 logits at that step (a near-tie may be broken either way by a
correct bf16 kernel, a clearly worse token may not). Exits non-zero on any failure."""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import transformers

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import tiny_teacher  # noqa: E402

WORDS = ("the model restores relation attention query key value rope scaled student teacher short "
         "context long green blue yellow sky sun grass pass magic number special").split()
CONFIGS = {
    "mha": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=4),
    "gqa_linear4": dict(hidden_size=128, intermediate_size=256, num_hidden_layers=3, num_attention_heads=8,
                        num_key_value_heads=2, rope_scaling={"rope_type": "linear", "factor": 4.0}),
}


def model_make(folder, texts, cfg, seed):
    tok = tiny_teacher.tokenizer_train(texts, 400, Path(folder))
    config = transformers.LlamaConfig(vocab_size=tok.get_vocab_size(), max_position_embeddings=2048,
                                      bos_token_id=tok.token_to_id("<s>"), eos_token_id=tok.token_to_id("</s>"),
                                      tie_word_embeddings=False, **cfg)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # peaked attention, as in a trained model
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.normal_(0.0, 0.15)
            layer.self_attn.k_proj.weight.normal_(0.0, 0.15)
    model.save_pretrained(str(folder))
    return tok


def cli(binary, *args):
    r = subprocess.run([str(binary), "eval", *map(str, args)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"linear-ard eval {' '.join(map(str, args))} failed:\n{r.stderr}")
    return r


def requests_of(folder):
    """Every request of the samples log `eval tasks --output_path FOLDER --log_samples` wrote (lm-eval's
    layout: FOLDER/<model>/samples_<task>_<date>.jsonl) as {context, continuation, logprob, greedy}."""
    logs = sorted(folder.glob("*/samples_*.jsonl"))
    if not logs:
        raise RuntimeError(f"no samples log under {folder}")
    out = []
    for line in logs[0].read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        for args, (logprob, greedy) in zip(sample["arguments"].values(), sample["filtered_resps"]):
            out.append({"context": args["arg_0"], "continuation": args["arg_1"], "logprob": float(logprob),
                        "greedy": greedy == "True"})
    return out


def logits_of(models, ids, device):
    """{dtype: fp32 CPU logits [n, vocab]} of one sequence for each transformers model."""
    out = {}
    with torch.no_grad():
        for name, m in models.items():
            dev = "cpu" if name == "fp64" else device
            out[name] = m(torch.tensor([ids], device=dev)).logits[0].double().cpu()
    return out


def check_model(binary, folder, tok, device, dtype, work, failures):
    name = folder.name
    hf = {"fp64": transformers.LlamaForCausalLM.from_pretrained(str(folder), dtype=torch.float64).eval()}
    hf_dtype = torch.bfloat16 if dtype == "bf16" else torch.float32
    hf["ours_dtype"] = transformers.LlamaForCausalLM.from_pretrained(str(folder), dtype=hf_dtype).to(device).eval()
    args = ["--device", device, "--dtype", dtype]

    # Loglikelihoods of harness-style requests.
    rng = random.Random(1)
    docs = [{"context": "Question: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 40))) + "\nAnswer:",
             "choices": [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(3)],
             "gold": rng.randrange(3)} for _ in range(12)]
    task = work / f"{name}_mc.jsonl"
    task.write_text("".join(json.dumps(d) + "\n" for d in docs))
    samples = work / f"{name}_samples"
    cli(binary, "tasks", folder, "--tasks", task, "--output_path", samples, "--log_samples", "--batch-size", 4, *args)
    requests = requests_of(samples)
    worst = 0.0
    for r in requests:
        ctx = tok.encode(r["context"]).ids
        whole = tok.encode(r["context"] + r["continuation"]).ids
        k = len(whole) - len(ctx)
        lg = logits_of(hf, whole, device)
        target = torch.tensor(whole[-k:])
        ll = {n: l.log_softmax(-1)[-k - 1:-1].gather(-1, target[:, None]).sum().item() for n, l in lg.items()}
        err_ours, err_hf = abs(r["logprob"] - ll["fp64"]), abs(ll["ours_dtype"] - ll["fp64"])
        bound = 1e-4 if dtype == "fp32" else 2 * err_hf + 1e-3
        worst = max(worst, err_ours / bound)
        if err_ours > bound:
            failures.append(f"{name} loglikelihood: ours {r['logprob']:.5f}, fp64 {ll['fp64']:.5f}, "
                            f"transformers {dtype} {ll['ours_dtype']:.5f} (bound {bound:.2e})")
        if dtype == "fp32":
            greedy = bool((lg["fp64"][-k - 1:-1].argmax(-1) == target).all())
            if greedy != r["greedy"]:
                failures.append(f"{name} greedy flag differs on {r['continuation']!r}")
    print(f"{name}: {len(requests)} loglikelihoods, worst error / bound {worst:.2f}")

    # Greedy continuations of passkey and RULER prompts.
    steps, worst = 0, 0.0
    cli(binary, "passkey", folder, "--lengths", 300, 700, "--depths", 0, 0.5, 1, "-o", work / f"{name}_pk", *args)
    ruler_out = work / f"{name}_ruler"
    cli(binary, "ruler", folder, "--lengths", 1024, "--samples", 1, "--quiet", "--tasks", "niah_single_1",
        "niah_multikey_2", "vt", "fwe", "-o", ruler_out, *args)
    pk = json.loads((work / f"{name}_pk.json").read_text())
    ruler = json.loads(ruler_out.with_suffix(".json").read_text())
    # A passkey prompt is its text's ids and then the answer lead's (the ids that begin the answer).
    pairs = [(p["text"], p["answer_lead_ids"], out) for row in pk["rows"] for p, out in zip(row["prompts"], row["output_ids"])]
    pairs += [(s["prompt"], [], s["output_ids"]) for s in ruler["samples"]]
    for text, lead, out in pairs:
        ids = tok.encode(text).ids + lead
        lg = logits_of(hf, ids + out, device)
        for t, token in enumerate(out):
            step = lg["fp64"][len(ids) - 1 + t]
            tol = 1e-4 if dtype == "fp32" else 2 * (lg["ours_dtype"][len(ids) - 1 + t] - step).abs().max().item()
            gap = (step.max() - step[token]).item()
            worst = max(worst, gap / tol)
            steps += 1
            if gap > tol:
                failures.append(f"{name} greedy step {t} of a {len(ids)}-token prompt: chose {token}, "
                                f"{gap:.4f} below the best {int(step.argmax())} (tolerance {tol:.4f})")
                break
    print(f"{name}: {steps} greedy steps over {len(pairs)} prompts, worst gap / tolerance {worst:.2f}")
    print(f"{name}: RULER prefill {ruler['prefill_tokens_per_s']:.0f} tok/s, "
          f"decode {ruler['decode_tokens_per_s']:.1f} tok/s ({device}, {dtype})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("LINEAR_ARD_BUILD_DIR", str(ROOT / "build-gpu")))
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--dtype", choices=["fp32", "bf16"], help="default: bf16 on cuda, fp32 on cpu")
    args = ap.parse_args()
    dtype = args.dtype or ("bf16" if args.device == "cuda" else "fp32")
    binary = Path(args.build) / "src" / "cli" / "linear-ard"
    if not binary.is_file():
        sys.exit(f"{binary} is missing: build the linear_ard_cli target")
    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) + "." for _ in range(300)]
    texts += ["The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."] * 20
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for i, (name, cfg) in enumerate(CONFIGS.items()):
            tok = model_make(work / name, texts, cfg, seed=i)
            check_model(binary, work / name, tok, args.device, dtype, work, failures)
    for f in failures:
        print("FAIL", f)
    print(f"eval vs transformers ({args.device}, {dtype}): {'ok' if not failures else f'{len(failures)} failures'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
