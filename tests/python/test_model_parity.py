"""Parity of the C++ LLaMA-family model with transformers, per family and RoPE scaling.

Each case builds a small random model with transformers (LLaMA-2-like MHA, LLaMA-3-like GQA with
tied embeddings, Mistral with a sliding window, Mistral-Nemo-like with an explicit head_dim != hidden
/ heads, Qwen2 with q/k/v biases, Qwen3 with per-head q/k RMSNorm, biases and an explicit head_dim,
Phi-3 with fused qkv_proj / gate_up_proj and a partial rotary dimension) and one RoPE scaling (Phi-3
takes default and longrope only),
saves it with save_pretrained (safetensors), runs tests/model/model_dump on the same folder and
token ids, and compares: RoPE inv_freq / attention scaling, logits, every hidden state, post-RoPE
Q/K/V of the first and last layers (recomputed from the HF modules exactly as HF's attention does),
greedy KV-cache generation against generate(do_sample=False), early stop after the last layer's
QKV against the full run, recomputed against plain gradients, and that transformers reads the
config.json we write with the same RoPE.

    pytest tests/python/test_model_parity.py                       (CI: CPU, fp32)
    python tests/python/test_model_parity.py [--device cuda --dtype bfloat16] [--table out.md]

In fp32 the criterion is a relative error (||a - b|| / ||b||) of at most 1e-4. In bf16/fp16 both
models are compared with an fp32 transformers reference, and ours may not be more than twice as far
from it as transformers in the same dtype (plus 1e-3 for ties at the rounding level).
"""

import argparse
import os
import subprocess
import sys
import tempfile

import pytest
import torch
import transformers
from safetensors.torch import load_file

VOCAB, HIDDEN, INTERMEDIATE, LAYERS, HEADS, MAX_POS = 256, 64, 128, 2, 4, 32
GENERATE = 8
FP32_TOLERANCE = 1e-4
ORIGINAL = 16  # longrope's original_max_position_embeddings (Phi-3 holds it at the top level)

# name -> (config class, its keys, rope_theta, keys of its rope dict)
FAMILIES = {
    "llama2": ("LlamaConfig", dict(num_key_value_heads=4), 1e4, {}),
    "llama3": ("LlamaConfig", dict(num_key_value_heads=2, tie_word_embeddings=True), 5e5, {}),
    "mistral": ("MistralConfig", dict(num_key_value_heads=2, sliding_window=8), 1e6, {}),
    "mistral_head_dim": ("MistralConfig", dict(num_key_value_heads=2, head_dim=24, sliding_window=None), 1e6, {}),
    "qwen2": ("Qwen2Config", dict(num_key_value_heads=2), 1e6, {}),
    "qwen3": ("Qwen3Config", dict(num_key_value_heads=2, head_dim=24, attention_bias=True), 1e6, {}),
    "phi3": ("Phi3Config", dict(num_key_value_heads=2, original_max_position_embeddings=ORIGINAL), 1e4,
             dict(partial_rotary_factor=0.75)),
}
# Phi3Config refuses every other rope type.
FAMILY_SCALINGS = {"phi3": ("none", "longrope_short", "longrope_long")}


def rotary_half(family):
    """Half the rotated dimensions of a head: longrope's factor lists have this many entries."""
    _, extra, _, rope = FAMILIES[family]
    head_dim = extra.get("head_dim", HIDDEN // HEADS)
    return int(head_dim * rope.get("partial_rotary_factor", 1.0)) // 2


def longrope_factors(half):
    return dict(short_factor=[1.0 + 0.05 * i for i in range(half)], long_factor=[1.0 + 0.6 * i for i in range(half)])


_LONGROPE = dict(rope_type="longrope", original_max_position_embeddings=ORIGINAL)
# name -> (rope parameters, sequence length). Lengths put dynamic past max_position_embeddings (the
# NTK base grows) and longrope on both sides of original_max_position_embeddings.
SCALINGS = {
    "none": (dict(rope_type="default"), 24),
    "linear": (dict(rope_type="linear", factor=2.0), 24),
    "dynamic": (dict(rope_type="dynamic", factor=2.0), 40),
    "yarn": (dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=8), 24),
    "yarn_explicit": (dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=8,
                           attention_factor=0.9, beta_fast=16.0, beta_slow=2.0, truncate=False), 24),
    "yarn_mscale": (dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=8,
                         mscale=0.707, mscale_all_dim=1.0), 24),
    "llama3": (dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                    original_max_position_embeddings=16), 24),
    "longrope_short": (_LONGROPE, 12),
    "longrope_long": (_LONGROPE, 24),
}
CASES = [(f, s) for f in FAMILIES for s in FAMILY_SCALINGS.get(f, SCALINGS)]


def model_dump_path():
    build = os.environ.get("LINEAR_ARD_BUILD_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
    return os.path.join(build, "tests", "model", "model_dump")


def rel_err(a, b):
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def family_rope(family, scaling):
    """The rope dict of `scaling` for a model of `family` (its theta, partial rotary factor and
    longrope factor lists)."""
    _, _, theta, extra = FAMILIES[family]
    rope = dict(SCALINGS[scaling][0], rope_theta=theta, **extra)
    if rope["rope_type"] == "longrope":
        rope.update(longrope_factors(rotary_half(family)))
    return rope


def build_model(family, scaling, seed):
    cls_name, extra, _, _ = FAMILIES[family]
    rope = family_rope(family, scaling)
    config = getattr(transformers, cls_name)(
        vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS, num_attention_heads=HEADS, max_position_embeddings=MAX_POS,
        rms_norm_eps=1e-5, rope_parameters=rope, bos_token_id=None, eos_token_id=None,
        pad_token_id=None, architectures=[cls_name.replace("Config", "ForCausalLM")], **extra)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    # HF's 0.02 init makes attention nearly uniform; larger weights make positions matter.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.normal_(0, 0.1)
    return model


def hf_qkv(model, hidden_in, layer, position_ids):
    """Post-RoPE Q, K, V of `layer` as HF's attention computes them from the layer's input: Phi-3's
    fused qkv_proj sliced as Phi3Attention does, Qwen3's q_norm / k_norm on each head."""
    modeling = sys.modules[type(model).__module__]
    block = model.model.layers[layer]
    attn = block.self_attn
    normed = block.input_layernorm(hidden_in)
    shape = (*hidden_in.shape[:-1], -1, attn.head_dim)
    if hasattr(attn, "qkv_proj"):
        c = model.config
        q_rows, kv_rows = c.num_attention_heads * attn.head_dim, c.num_key_value_heads * attn.head_dim
        q, k, v = attn.qkv_proj(normed).split([q_rows, kv_rows, kv_rows], dim=-1)
        q, k, v = q.view(shape), k.view(shape), v.view(shape)
    else:
        q, k, v = attn.q_proj(normed).view(shape), attn.k_proj(normed).view(shape), attn.v_proj(normed).view(shape)
    if hasattr(attn, "q_norm"):
        q, k = attn.q_norm(q), attn.k_norm(k)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    cos, sin = model.model.rotary_emb(hidden_in, position_ids)
    q, k = modeling.apply_rotary_pos_emb(q, k, cos, sin)
    return q, k, v


def hf_run(model, ids, mask, prompt_len):
    with torch.no_grad():
        out = model(ids, attention_mask=mask, output_hidden_states=True)
        rotary = model.model.rotary_emb
        result = {"logits": out.logits, "hidden": out.hidden_states,
                  "inv_freq": rotary.inv_freq.detach().clone(),
                  "attention_scaling": float(rotary.attention_scaling)}
        positions = torch.arange(ids.shape[1], device=ids.device)[None]
        for layer in (0, LAYERS - 1):
            result[f"qkv.{layer}"] = hf_qkv(model, out.hidden_states[layer], layer, positions)
        prompt = ids[:1, :prompt_len]
        result["generated"] = model.generate(prompt, attention_mask=torch.ones_like(prompt),
                                             max_new_tokens=GENERATE, do_sample=False)
    return result


def rope_reads_same(folder, written_folder, n):
    """transformers gives the same cos/sin for our written config.json as for its own."""
    theirs = transformers.AutoConfig.from_pretrained(folder)
    ours = transformers.AutoConfig.from_pretrained(written_folder)
    model_cls = transformers.AutoModelForCausalLM._model_mapping[type(theirs)]
    rotary_cls = sys.modules[model_cls.__module__].__dict__[model_cls.__name__.replace("ForCausalLM", "RotaryEmbedding")]
    x = torch.zeros(1, n, HIDDEN)
    positions = torch.arange(n)[None]
    a, b = rotary_cls(theirs), rotary_cls(ours)
    same_top = all(getattr(theirs, k, None) == getattr(ours, k, None)
                   for k in ("max_position_embeddings", "original_max_position_embeddings", "head_dim", "model_type"))
    return same_top and all(torch.equal(u, v) for u, v in zip(a(x, positions), b(x, positions)))


def saved_loads_same(saved, model, ids, stored):
    """The folder our writer saved (hf_folder_save) loads in transformers as the model's own class,
    with the tensor names transformers stored (Phi-3's fused ones) and the same logits."""
    again = transformers.AutoModelForCausalLM.from_pretrained(saved, dtype=torch.float32)
    names = set(load_file(os.path.join(saved, "model.safetensors")))
    with torch.no_grad():
        same_logits = torch.equal(again(ids).logits, model(ids).logits)
    return type(again) is type(model) and names == stored and same_logits


def run_case(family, scaling, device="cpu", dtype="float32", workdir=None):
    n = SCALINGS[scaling][1]
    seed = 1000 * list(FAMILIES).index(family) + list(SCALINGS).index(scaling)
    torch_dtype = getattr(torch, dtype)
    model = build_model(family, scaling, seed)
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (2, n), generator=generator)
    mask = torch.ones(2, n, dtype=torch.long)
    mask[1, n - 3:] = 0  # right padding on the second row
    prompt_len = 28 if scaling == "dynamic" else 12  # generation crosses the dynamic/longrope thresholds
    row = {"family": family, "scaling": scaling, "n": n}

    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        folder, written, dump = os.path.join(tmp, "model"), os.path.join(tmp, "written"), os.path.join(tmp, "dump.safetensors")
        model.save_pretrained(folder)
        stored = set(load_file(os.path.join(folder, "model.safetensors")))
        os.makedirs(written)
        cmd = [model_dump_path(), folder, dump,
               "--ids", ",".join(" ".join(map(str, r)) for r in ids.tolist()),
               "--mask", ",".join(" ".join(map(str, r)) for r in mask.tolist()),
               "--qkv-layers", f"0,{LAYERS - 1}", "--dtype", dtype, "--device", device,
               "--stop-after", str(LAYERS - 1), "--grad-check", "--write-config", written]
        subprocess.run(cmd, check=True)
        ours = load_file(dump)
        # Generation runs on the prompt alone, as HF's generate does.
        gen_dump = os.path.join(tmp, "gen.safetensors")
        subprocess.run([model_dump_path(), folder, gen_dump, "--ids", " ".join(map(str, ids[0, :prompt_len].tolist())),
                        "--dtype", dtype, "--device", device, "--generate", str(GENERATE)], check=True)
        ours["generated"] = load_file(gen_dump)["generated"]
        same_rope_config = rope_reads_same(folder, written, n)
        saved = os.path.join(tmp, "saved")
        subprocess.run([model_dump_path(), folder, os.path.join(tmp, "unused.safetensors"), "--ids", "1",
                        "--save-folder", saved], check=True)
        row["saved_same"] = saved_loads_same(saved, model, ids, stored)

    ref = hf_run(model, ids, mask, prompt_len)  # fp32 CPU reference
    row["inv_freq_equal"] = torch.equal(ours["rope.inv_freq"], ref["inv_freq"])
    row["attention_scaling_equal"] = ours["rope.attention_scaling"].item() == ref["attention_scaling"]
    row["config_roundtrip"] = same_rope_config
    row["logits"] = rel_err(ours["logits"], ref["logits"])
    row["hidden"] = max(rel_err(ours[f"hidden_states.{i}"], h) for i, h in enumerate(ref["hidden"]))
    row["qkv"] = max(rel_err(ours[f"{t}.{layer}"], ref[f"qkv.{layer}"][j])
                     for layer in (0, LAYERS - 1) for j, t in enumerate("qkv"))
    row["stop_after"] = max(rel_err(ours[f"stop.{t}.{LAYERS - 1}"], ours[f"{t}.{LAYERS - 1}"]) for t in "qkv")
    row["recompute_grad"] = max(rel_err(ours[k.replace("grad.plain.", "grad.recompute.")], ours[k])
                                 for k in ours if k.startswith("grad.plain."))
    row["generation_equal"] = torch.equal(ours["generated"], ref["generated"])

    if torch_dtype != torch.float32:
        # Same-dtype transformers on the same device sets the bar.
        low = model.to(device=device, dtype=torch_dtype)
        hf_low = hf_run(low, ids.to(device), mask.to(device), prompt_len)
        row["hf_logits"] = rel_err(hf_low["logits"], ref["logits"])
        row["hf_qkv"] = max(rel_err(hf_low[f"qkv.{layer}"][j], ref[f"qkv.{layer}"][j])
                            for layer in (0, LAYERS - 1) for j in range(3))
        row["generation_equal"] = torch.equal(ours["generated"], hf_low["generated"].cpu())
    return row


def row_ok(row, dtype):
    exact = (row["config_roundtrip"] and row["saved_same"] and row["stop_after"] == 0.0
             and row["recompute_grad"] <= 1e-5)
    if dtype == "float32":
        return (exact and row["inv_freq_equal"] and row["attention_scaling_equal"] and row["generation_equal"]
                and max(row["logits"], row["hidden"], row["qkv"]) <= FP32_TOLERANCE)
    return (exact and row["logits"] <= 2 * row["hf_logits"] + 1e-3
            and row["qkv"] <= 2 * row["hf_qkv"] + 1e-3)


@pytest.mark.skipif(not os.path.exists(model_dump_path()), reason="model_dump not built")
@pytest.mark.parametrize("family,scaling", CASES)
def test_model_parity(family, scaling):
    row = run_case(family, scaling)
    assert row["inv_freq_equal"] and row["attention_scaling_equal"], row
    assert row["config_roundtrip"] and row["saved_same"], row
    assert row["logits"] <= FP32_TOLERANCE and row["hidden"] <= FP32_TOLERANCE, row
    assert row["qkv"] <= FP32_TOLERANCE, row
    assert row["stop_after"] == 0.0, row
    assert row["recompute_grad"] <= 1e-5, row
    assert row["generation_equal"], row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--table", help="also write the markdown table to this file")
    args = parser.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    low = args.dtype != "float32"
    header = ["family", "scaling", "n", "logits", "hidden (max)", "Q/K/V (max)"]
    header += ["HF same-dtype logits", "HF same-dtype Q/K/V"] if low else ["inv_freq bitwise"]
    header += ["greedy = HF", "stop-after", "ckpt grad", "config round trip", "saved folder = HF", "ok"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    failures = 0
    for family, scaling in CASES:
        row = run_case(family, scaling, args.device, args.dtype)
        ok = row_ok(row, args.dtype)
        failures += not ok
        cells = [family, scaling, str(row["n"]), f"{row['logits']:.1e}", f"{row['hidden']:.1e}", f"{row['qkv']:.1e}"]
        cells += [f"{row['hf_logits']:.1e}", f"{row['hf_qkv']:.1e}"] if low else \
                 ["yes" if row["inv_freq_equal"] and row["attention_scaling_equal"] else "NO"]
        cells += ["yes" if row["generation_equal"] else "no", f"{row['stop_after']:.0e}",
                  f"{row['recompute_grad']:.0e}", "yes" if row["config_roundtrip"] else "NO",
                  "yes" if row["saved_same"] else "NO", "ok" if ok else "FAIL"]
        lines.append("| " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(f"\n{args.device} {args.dtype}: {len(CASES) - failures}/{len(CASES)} cases pass\n\n{table}")
    if args.table:
        with open(args.table, "w") as f:
            f.write(table + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
