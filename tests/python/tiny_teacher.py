"""Tiny random LLaMA-architecture teachers for the trainer and eval tests: a byte-level BPE
tokenizer trained on the given texts (HF tokenizers) and a LlamaForCausalLM with random weights
saved as an HF folder, plus the texts as JSONL. Its Q/K projections are initialised larger than
transformers' default so that attention rows are peaked rather than near-uniform, as in a trained
model (otherwise every relation KL would be ~0). Deterministic for a given seed.
"""

import json
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

BOS, EOS = "<s>", "</s>"


def tokenizer_train(texts, vocab_size, out_dir):
    """Byte-level BPE (GPT-2 style) with BOS/EOS, saved as tokenizer.json + tokenizer_config.json."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[BOS, EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer)
    tok.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B",
                                                       special_tokens=[(BOS, tok.token_to_id(BOS))])
    out_dir.mkdir(parents=True, exist_ok=True)
    tok.save(str(out_dir / "tokenizer.json"))
    (out_dir / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOS, "eos_token": EOS,
         "model_max_length": 1 << 30}, indent=2) + "\n")
    return tok


def teacher_make(out_dir, texts, *, hidden=128, intermediate=256, layers=4, heads=4, kv_heads=2,
                 max_positions=256, rope_theta=10000.0, vocab_size=1024, qk_std=0.15, seed=0):
    """Tokenizer + random LlamaForCausalLM (fp32 safetensors) in out_dir."""
    out_dir = Path(out_dir)
    tok = tokenizer_train(texts, vocab_size, out_dir)
    config = transformers.LlamaConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=hidden, intermediate_size=intermediate,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions, rope_theta=rope_theta,
        bos_token_id=tok.token_to_id(BOS), eos_token_id=tok.token_to_id(EOS),
        tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.normal_(0.0, qk_std)
            layer.self_attn.k_proj.weight.normal_(0.0, qk_std)
    model.save_pretrained(str(out_dir))
    return out_dir


def data_write(path, texts):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
