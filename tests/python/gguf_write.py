"""A transformers model written as a GGUF file the way llama.cpp's convert_hf_to_gguf.py writes its
architecture, with llama.cpp's `gguf` writer, for tests/python/test_import_gguf.py: the metadata
keys of the architecture (head and key lengths, rotary dimension count), the tensors under gguf's
names (LLaMA's q/k rows permuted into llama.cpp's rotary layout; Phi-3's fused qkv and gate|up kept
fused), the RoPE scaling as llama.cpp stores it (llama3: a `rope_freqs` tensor of per-pair factors;
longrope: `rope_factors_long` / `rope_factors_short` tensors; linear / yarn: `rope.scaling.*`
keys), and a small byte-level BPE tokenizer (GPT-2's byte alphabet, one merge, an end-of-text
token: VOCAB ids) in llama.cpp's tokenizer keys."""

import math

import gguf
import numpy as np
import torch


ARCHS = {"llama": gguf.MODEL_ARCH.LLAMA, "mistral": gguf.MODEL_ARCH.LLAMA, "qwen2": gguf.MODEL_ARCH.QWEN2,
         "qwen3": gguf.MODEL_ARCH.QWEN3, "phi3": gguf.MODEL_ARCH.PHI3}


def _byte_alphabet():
    """GPT-2's printable stand-in for each byte (bytes_to_unicode), in byte order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return [out[b] for b in range(256)]


TOKENS = _byte_alphabet() + ["Ġt", "<|endoftext|>"]
VOCAB = len(TOKENS)


def _tokenizer_keys(writer):
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(TOKENS)
    writer.add_token_types([gguf.TokenType.NORMAL] * (VOCAB - 1) + [gguf.TokenType.CONTROL])
    writer.add_token_merges(["Ġ t"])
    writer.add_bos_token_id(VOCAB - 1)
    writer.add_eos_token_id(VOCAB - 1)


def _llama_permute(w, n_head):
    """llama.cpp's LlamaModel.permute: each head's rotary halves interleaved."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _llama3_factors(rope, dim):
    """convert_hf_to_gguf's rope_freqs for rope_type llama3: the divisor of each pair's frequency."""
    base, factor = rope["rope_theta"], rope["factor"]
    low, high, old = rope["low_freq_factor"], rope["high_freq_factor"], rope["original_max_position_embeddings"]
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    out = []
    for freq in freqs.tolist():
        wavelen = 2 * math.pi / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def _rope_metadata(writer, config, dim):
    """The model's RoPE scaling as llama.cpp's converter stores it; returns extra tensors."""
    rope = config.rope_parameters
    kind = rope.get("rope_type", "default")
    if kind == "llama3":
        return {"rope_freqs.weight": _llama3_factors(rope, dim)}
    if kind == "longrope":
        writer.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
        factor = config.max_position_embeddings / rope["original_max_position_embeddings"]
        writer.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(factor) / math.log(rope["original_max_position_embeddings"])))
        return {"rope_factors_long.weight": np.array(rope["long_factor"], dtype=np.float32),
                "rope_factors_short.weight": np.array(rope["short_factor"], dtype=np.float32)}
    if kind in ("linear", "yarn"):
        writer.add_rope_scaling_type(gguf.RopeScalingType(kind))
        writer.add_rope_scaling_factor(rope["factor"])
        if kind == "yarn":
            writer.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
    return {}


def gguf_from_model(model, path, name="tiny"):
    """Writes `model` (a transformers causal LM of a family in ARCHS with VOCAB ids) as a F32 GGUF
    at `path`."""
    config = model.config
    arch = ARCHS[config.model_type]
    arch_name = gguf.MODEL_ARCH_NAMES[arch]
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    rotary = int(head_dim * config.rope_parameters.get("partial_rotary_factor", 1.0))
    writer = gguf.GGUFWriter(str(path), arch_name)
    writer.add_name(name)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_rope_dimension_count(rotary)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    _tokenizer_keys(writer)
    extra = _rope_metadata(writer, config, rotary)
    names = gguf.get_tensor_name_map(arch, config.num_hidden_layers)
    for hf_name, t in model.state_dict().items():
        if hf_name == "lm_head.weight" and config.tie_word_embeddings:
            continue
        data = t.detach().float().numpy()
        if arch == gguf.MODEL_ARCH.LLAMA and hf_name.endswith("q_proj.weight"):
            data = _llama_permute(data, config.num_attention_heads)
        if arch == gguf.MODEL_ARCH.LLAMA and hf_name.endswith("k_proj.weight"):
            data = _llama_permute(data, config.num_key_value_heads)
        writer.add_tensor(names.get_name(hf_name, try_suffixes=(".weight", ".bias")), data)
    for gguf_name, data in extra.items():
        writer.add_tensor(gguf_name, data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
