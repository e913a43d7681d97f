#!/usr/bin/env python3
"""Exports a HuggingFace folder (a restored model, `linear-ard restore`'s OUT/model) as a GGUF file
that llama.cpp runs, through llama.cpp's own `gguf` package (GGUFWriter, its quantizers and its
vocabulary readers):

    scripts/export_gguf.py MODEL_DIR OUT.gguf [--type bf16|f16|q8_0] [--force]
    linear-ard export-gguf MODEL_DIR OUT.gguf [--type ...]        # runs this script

What is written, as llama.cpp's convert_hf_to_gguf.py writes it: `general.architecture` (llama for
LLaMA and Mistral folders, qwen2 for Qwen2), the sizes, `context_length` (config.json's
max_position_embeddings: the restored model's extended length), `rope.freq_base`, the RoPE scaling
keys llama.cpp reads (`rope.scaling.type`, `.factor`, `.original_context_length`; for YaRN also
`.attn_factor`, `.yarn_beta_fast`, `.yarn_beta_slow` when config.json sets them), the tokenizer
(`tokenizer.ggml.*`: a byte-level BPE tokenizer.json as `gpt2` with its merges and pre-tokenizer
name, a SentencePiece tokenizer.model as `llama`; special tokens, add_bos/add_eos and the chat
template), and the tensors under llama.cpp's names, Q/K rows permuted to llama.cpp's rotary layout
for the llama architecture. Matrices take --type (q8_0 falls back to f16 for a matrix whose rows
are not a multiple of 32 values, as llama.cpp does); norms and biases stay f32.

RoPE types llama.cpp has no key for are refused by name: `dynamic` (no dynamic NTK in llama.cpp),
`llama3` and `longrope` (llama.cpp stores them as frequency-factor tensors, not written here).

The file is written under a temporary name and renamed, so OUT.gguf is absent or complete.
"""

import argparse
import json
import os
import re
import sys
from pathlib import Path

import numpy as np

# config.json model_type -> GGUF architecture (llama.cpp's converter runs Mistral as llama).
ARCHITECTURES = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2"}
TYPES = ("bf16", "f16", "q8_0")
# tokenizer.json pre-tokenizer regexes -> llama.cpp's pre-tokenizer names (src/llama-vocab.cpp).
PRE_TOKENIZERS = {
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+":
        "llama-bpe",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+":
        "qwen2",
}


class ExportError(Exception):
    """An input this exporter refuses, with a message naming the file and what is wrong."""


def config_read(folder):
    path = folder / "config.json"
    if not path.is_file():
        raise ExportError(f"{folder}: no config.json (not a HuggingFace model folder)")
    config = json.loads(path.read_text())
    model_type = config.get("model_type")
    if model_type not in ARCHITECTURES:
        raise ExportError(f"{path}: model_type '{model_type}' cannot be exported "
                          f"(supported: {', '.join(sorted(ARCHITECTURES))})")
    return config


def rope_of(config):
    """(rope_theta, the scaling dict or None) from transformers 5's rope_parameters or the legacy
    rope_theta + rope_scaling."""
    params = dict(config.get("rope_parameters") or {})
    legacy = config.get("rope_scaling") or {}
    theta = params.pop("rope_theta", config.get("rope_theta", 10000.0))
    scaling = params or dict(legacy)
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    return theta, (None if kind == "default" else dict(scaling, rope_type=kind))


def rope_write(writer, config, path):
    """llama.cpp's RoPE keys for `config`'s scaling; raises ExportError for a type it cannot read."""
    import gguf
    theta, scaling = rope_of(config)
    writer.add_rope_freq_base(float(theta))
    if scaling is None:
        return
    kind = scaling["rope_type"]
    if kind not in ("linear", "yarn"):
        raise ExportError(f"{path}: RoPE type '{kind}' cannot be exported: llama.cpp reads linear and yarn "
                          "scaling from keys (dynamic NTK it does not implement; llama3 and longrope it "
                          "reads as frequency-factor tensors, which this exporter does not write)")
    writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR if kind == "linear" else gguf.RopeScalingType.YARN)
    writer.add_rope_scaling_factor(float(scaling["factor"]))
    original = scaling.get("original_max_position_embeddings")
    if original is None and kind == "linear":
        original = round(config["max_position_embeddings"] / float(scaling["factor"]))
    if original is not None:
        writer.add_rope_scaling_orig_ctx_len(int(original))
    if kind == "yarn":
        for key, add in (("attention_factor", writer.add_rope_scaling_attn_factors),
                         ("beta_fast", writer.add_rope_scaling_yarn_beta_fast),
                         ("beta_slow", writer.add_rope_scaling_yarn_beta_slow)):
            if scaling.get(key) is not None:
                add(float(scaling[key]))


def hparams_write(writer, config, name, file_type):
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    writer.add_name(name)
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(config.get("num_key_value_heads") or heads)
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
    writer.add_rope_dimension_count(head_dim)
    if head_dim != config["hidden_size"] // heads:
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    writer.add_vocab_size(config["vocab_size"])
    writer.add_file_type(file_type)


def pre_tokenizer_name(tokenizer_json):
    """llama.cpp's pre-tokenizer name for a byte-level BPE tokenizer.json."""
    pre = tokenizer_json.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", [pre])
    for step in steps:
        pattern = (step.get("pattern") or {}).get("Regex")
        if step.get("type") == "Split" and pattern in PRE_TOKENIZERS:
            return PRE_TOKENIZERS[pattern]
    kinds = [s.get("type") for s in steps]
    if kinds == ["Digits", "ByteLevel"] and steps[0].get("individual_digits"):
        return "smollm"
    if kinds == ["ByteLevel"]:
        return "gpt-2"
    print(f"export_gguf: warning: pre-tokenizer {kinds} has no llama.cpp name here; writing 'default'",
          file=sys.stderr)
    return "default"


def vocab_write(writer, folder, config):
    """tokenizer.ggml.*: gguf's own BPE / SentencePiece vocabulary readers, with the token types of
    tokenizer.json's added tokens (special: control, others: user-defined) as llama.cpp's converter
    sets them, and gguf's SpecialVocab for special ids, add_bos/add_eos, merges, chat template."""
    import gguf
    from gguf.vocab import BpeVocab, SentencePieceVocab
    tokenizer_json = json.loads((folder / "tokenizer.json").read_text()) if (folder / "tokenizer.json").is_file() else {}
    try:
        vocab = BpeVocab(folder)
    except FileNotFoundError:
        try:
            vocab = SentencePieceVocab(folder)
        except FileNotFoundError as e:
            raise ExportError(f"{folder}: no byte-level BPE tokenizer.json or SentencePiece tokenizer.model") from e
    tokens, scores, types = [], [], []
    for text, score, kind in vocab.all_tokens():
        tokens.append(text)
        scores.append(score)
        types.append(kind)
    for added in tokenizer_json.get("added_tokens", []):
        if added["id"] < len(types):
            types[added["id"]] = gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED
    while len(tokens) < config["vocab_size"]:  # embedding rows past the tokenizer, as llama.cpp pads
        tokens.append(f"[PAD{len(tokens)}]".encode())
        scores.append(-1000.0)
        types.append(gguf.TokenType.UNUSED)
    writer.add_tokenizer_model(vocab.tokenizer_model)
    if vocab.tokenizer_model == "gpt2":
        writer.add_tokenizer_pre(pre_tokenizer_name(tokenizer_json))
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    gguf.SpecialVocab(folder, load_merges=vocab.tokenizer_model == "gpt2", n_vocab=len(tokens)).add_to_gguf(
        writer, quiet=True)


def weights_read(folder):
    """{name: float32 numpy array} of every safetensors file in `folder`."""
    from safetensors import safe_open
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ExportError(f"{folder}: no *.safetensors weights")
    out = {}
    for f in files:
        with safe_open(str(f), framework="pt") as st:
            for name in st.keys():
                out[name] = st.get_tensor(name).float().numpy()
    return out


def qk_permute(w, heads):
    """HF's rotate-half rows -> llama.cpp's interleaved pairs (convert_hf_to_gguf.py's permute)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def tensor_encode(name, data, kind):
    """(array, raw GGML type or None for f32) of one tensor at export type `kind`."""
    import gguf
    from gguf import GGMLQuantizationType as T
    if data.ndim == 1:
        return data.astype(np.float32), None
    if kind == "q8_0" and data.shape[-1] % gguf.GGML_QUANT_SIZES[T.Q8_0][0] == 0:
        return gguf.quants.quantize(data, T.Q8_0), T.Q8_0
    if kind == "bf16":
        return gguf.quants.quantize(data, T.BF16).view(np.uint8), T.BF16
    return data.astype(np.float16), None


def tensors_write(writer, folder, config, arch, kind, path):
    import gguf
    weights = weights_read(folder)
    layers = config["num_hidden_layers"]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA if arch == "llama" else gguf.MODEL_ARCH.QWEN2, layers)
    heads, kv_heads = config["num_attention_heads"], config.get("num_key_value_heads") or config["num_attention_heads"]
    if config.get("tie_word_embeddings") or "lm_head.weight" not in weights:
        weights.pop("lm_head.weight", None)
    for name, data in weights.items():
        if re.search(r"\.rotary_emb\.", name):
            continue
        target = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if target is None:
            raise ExportError(f"{path}: tensor '{name}' has no llama.cpp name for architecture {arch}")
        if arch == "llama" and name.endswith("q_proj.weight"):
            data = qk_permute(data, heads)
        elif arch == "llama" and name.endswith("k_proj.weight"):
            data = qk_permute(data, kv_heads)
        array, raw = tensor_encode(target, data, kind)
        writer.add_tensor(target, array, raw_dtype=raw)


def export_gguf(folder, out, kind="bf16", force=False):
    import gguf
    folder, out = Path(folder), Path(out)
    if not folder.is_dir():
        raise ExportError(f"{folder}: no such model folder")
    if out.exists() and not force:
        raise ExportError(f"{out}: already exists (use --force to replace it)")
    config = config_read(folder)
    arch = ARCHITECTURES[config["model_type"]]
    file_type = {"bf16": gguf.LlamaFileType.MOSTLY_BF16, "f16": gguf.LlamaFileType.MOSTLY_F16,
                 "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[kind]
    tmp = out.parent / f".{out.name}.tmp.{os.getpid()}"
    writer = gguf.GGUFWriter(str(tmp), arch)
    try:
        hparams_write(writer, config, folder.resolve().name, file_type)
        rope_write(writer, config, folder / "config.json")
        vocab_write(writer, folder, config)
        writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
        tensors_write(writer, folder, config, arch, kind, folder)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, out)
    finally:
        writer.close()
        if tmp.exists():
            tmp.unlink()
    print(f"export_gguf: {folder} -> {out} ({arch}, {kind})", file=sys.stderr)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="HuggingFace model folder (config.json, *.safetensors, tokenizer)")
    p.add_argument("out", help="GGUF file to write")
    p.add_argument("--type", choices=TYPES, default="bf16", help="matrices' type (default bf16)")
    p.add_argument("--force", action="store_true", help="replace an existing OUT.gguf")
    args = p.parse_args(argv)
    try:
        export_gguf(args.model, args.out, args.type, args.force)
    except ExportError as e:
        print(f"export_gguf: error: {e}", file=sys.stderr)
        return 1
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
