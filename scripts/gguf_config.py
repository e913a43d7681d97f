"""The config facts transformers' GGUF loader (5.23) leaves out, read from a GGUF file's own keys and
tensors the way llama.cpp's convert_hf_to_gguf.py wrote them, for scripts/import_gguf.py. Without
them an import loads without an error and computes another model:

- `{arch}.attention.key_length`: the head dimension when it is not hidden / heads (Qwen3 writes
  128 with 1024 / 16; Mistral-Nemo 128 with 5120 / 32); the loader keeps the class default.
- `{arch}.rope.dimension_count` below the head dimension: Phi-3's partial_rotary_factor
  (Phi-4-mini rotates 96 of 128).
- token ids the class defaults to that the vocabulary lacks (Phi3Config's pad and eos 32000, for a
  file of another vocabulary): the file's `tokenizer.ggml.*_token_id`, else none.
- the RoPE scaling: LLaMA-3.1+'s llama3 scaling is stored as a `rope_freqs` tensor of per-pair
  divisors, Phi-3's longrope as `rope_factors_long` / `rope_factors_short` tensors with
  `rope.scaling.original_context_length`, linear and yarn as `rope.scaling.*` keys; the loader
  reads none of them.
"""

import math

import numpy as np


class GgufConfigError(Exception):
    """A GGUF whose RoPE tensors or keys describe no scaling transformers can express."""


def _field(reader, key):
    f = reader.fields.get(key)
    return None if f is None else f.contents()


def _tensor(reader, name):
    for t in reader.tensors:
        if t.name == name:
            return np.array(t.data, dtype=np.float64).reshape(-1)
    return None


def _llama3_factors(theta, dim, factor, low, high, original):
    """The divisor of each pair's frequency that llama3 scaling applies (convert_hf_to_gguf's rope_freqs)."""
    freqs = 1.0 / (theta ** (np.arange(0, dim, 2, dtype=np.float32).astype(np.float64) / dim))
    wavelen = 2 * math.pi / freqs
    smooth = (original / wavelen - low) / (high - low)
    medium = 1 / ((1 - smooth) / factor + smooth)
    return np.where(wavelen < original / high, 1.0, np.where(wavelen > original / low, factor, medium))


def llama3_from_freqs(freqs, theta, dim):
    """llama3 rope parameters that reproduce a `rope_freqs` tensor. Its divisors fix the factor
    (the largest) and the band edges, which depend on original_max_position_embeddings over each of
    low_freq_factor and high_freq_factor only: so low_freq_factor is taken as 1 and the other two
    fitted to the medium band (least squares over its pairs), and the fit is checked to give every
    divisor back. Raises GgufConfigError when none does."""
    factor = float(freqs.max())
    wavelen = 2 * math.pi * theta ** (np.arange(0, dim, 2, dtype=np.float32).astype(np.float64) / dim)
    medium = (freqs > 1 + 1e-6) & (freqs < factor * (1 - 1e-6))
    if medium.sum() >= 2:
        # In the medium band 1/f = (1 - s)/F + s with s = (L/w - 1)/(h - 1): s is linear in 1/w.
        s = (1 / freqs[medium] - 1 / factor) / (1 - 1 / factor)
        slope, intercept = np.polyfit(1 / wavelen[medium], s, 1)
        high = 1 - 1 / intercept
        original = slope * (high - 1)
    else:
        # One pair or none in the band: Meta's high_freq_factor 4, the length from that pair or
        # just below the first fully scaled wavelength.
        high = 4.0
        original = (wavelen[medium][0] * (1 + 3 * (1 / freqs[medium][0] - 1 / factor) / (1 - 1 / factor))
                    if medium.any() else math.floor(wavelen[freqs >= factor * (1 - 1e-6)].min() - 1e-9))
    # The shortest decimal high_freq_factor that gives every divisor back (the file's are fp32).
    for digits in range(7):
        params = {"rope_type": "llama3", "factor": factor, "low_freq_factor": 1.0,
                  "high_freq_factor": round(float(high), digits), "original_max_position_embeddings": int(round(original))}
        again = _llama3_factors(theta, dim, factor, 1.0, params["high_freq_factor"], params["original_max_position_embeddings"])
        if params["high_freq_factor"] > 1 and np.allclose(again, freqs, rtol=1e-5, atol=0):
            return params
    raise GgufConfigError("tensor 'rope_freqs.weight' holds per-pair RoPE divisors that no llama3 scaling gives "
                          f"(largest {factor:g}); transformers has no rope type for them")


def _longrope(reader, arch, head_dim):
    long, short = _tensor(reader, "rope_factors_long.weight"), _tensor(reader, "rope_factors_short.weight")
    if long is None and short is None:
        return None
    if long is None or short is None:
        raise GgufConfigError("has only one of the tensors 'rope_factors_long.weight' and 'rope_factors_short.weight'")
    original = _field(reader, f"{arch}.rope.scaling.original_context_length")
    if original is None:
        raise GgufConfigError(f"has longrope factor tensors but no key '{arch}.rope.scaling.original_context_length'")
    context = _field(reader, f"{arch}.context_length")
    # The factor written out (transformers derives the same from the two lengths, with a warning).
    rope = {"rope_type": "longrope", "short_factor": short.tolist(), "long_factor": long.tolist(),
            "original_max_position_embeddings": int(original), "factor": context / original}
    attention = _field(reader, f"{arch}.rope.scaling.attn_factor")
    derived = math.sqrt(1 + math.log(context / original) / math.log(original)) if context > original else 1.0
    if attention is not None and not math.isclose(attention, derived, rel_tol=1e-6):
        rope["attention_factor"] = float(attention)
    return rope


def _keyed_scaling(reader, arch):
    kind = _field(reader, f"{arch}.rope.scaling.type")
    if kind in (None, "none"):
        return None
    factor = _field(reader, f"{arch}.rope.scaling.factor")
    if kind not in ("linear", "yarn") or factor is None:
        raise GgufConfigError(f"key '{arch}.rope.scaling.type' is '{kind}' (factor {factor}); the importer reads "
                              "linear and yarn scaling from keys, llama3 from rope_freqs, longrope from its factor tensors")
    rope = {"rope_type": kind, "factor": float(factor)}
    original = _field(reader, f"{arch}.rope.scaling.original_context_length")
    if kind == "yarn":
        if original is None:
            raise GgufConfigError(f"yarn scaling without key '{arch}.rope.scaling.original_context_length'")
        rope["original_max_position_embeddings"] = int(original)
        for key, name in (("yarn_beta_fast", "beta_fast"), ("yarn_beta_slow", "beta_slow"),
                          ("attn_factor", "attention_factor")):
            if (value := _field(reader, f"{arch}.rope.scaling.{key}")) is not None:
                rope[name] = float(value)
    return rope


def gguf_config_overrides(reader, arch, config):
    """Config attributes to set on transformers' config of the GGUF (`config`, as its loader built
    it) so that it describes the model the file holds. Raises GgufConfigError naming the key or
    tensor it cannot turn into a config."""
    out = {}
    heads = config.num_attention_heads
    head_dim = _field(reader, f"{arch}.attention.key_length") or config.hidden_size // heads
    if head_dim != config.hidden_size // heads or getattr(config, "head_dim", head_dim) != head_dim:
        out["head_dim"] = int(head_dim)
    rotary = _field(reader, f"{arch}.rope.dimension_count") or head_dim
    rope = dict(config.rope_parameters)
    if rotary != head_dim:
        rope["partial_rotary_factor"] = rotary / head_dim
    freqs = _tensor(reader, "rope_freqs.weight")
    scaling = (_longrope(reader, arch, head_dim) or _keyed_scaling(reader, arch)
               or (llama3_from_freqs(freqs, rope["rope_theta"], int(rotary)) if freqs is not None else None))
    if scaling:
        rope.update(scaling)
        if scaling["rope_type"] == "longrope":
            out["original_max_position_embeddings"] = scaling["original_max_position_embeddings"]
    if rope != config.rope_parameters:
        out["rope_parameters"] = rope
    for name, key in (("bos_token_id", "bos"), ("eos_token_id", "eos"), ("pad_token_id", "padding")):
        value = getattr(config, name, None)
        if isinstance(value, int) and value >= config.vocab_size:
            out[name] = _field(reader, f"tokenizer.ggml.{key}_token_id")
    return out
