#!/usr/bin/env python3
"""Builds the demo's default teacher: a tiny LLaMA-architecture model with RANDOM weights (no
pretraining yet) and a byte-level BPE tokenizer trained on text generated from the repository's own
docs/*.md and README.md (a word-bigram model of them), plus that text as JSONL training data.
Deterministic for a given --seed.

    scripts/make_demo_teacher.py OUT_DIR [--data OUT.jsonl] [--seed 0]

The random teacher is enough to exercise and measure the restoration pipeline (its relations are
well defined and PI x8 distorts them), not to say anything about language quality. Its Q/K
projections are initialised larger than transformers' default so attention rows are peaked rather
than near-uniform, as in a trained model (otherwise every relation KL would be ~0).
"""

import argparse
import json
import random
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

ROOT = Path(__file__).resolve().parents[1]
BOS, EOS = "<s>", "</s>"


def repo_paragraphs():
    """Non-empty paragraphs of README.md and docs/*.md, in a fixed order."""
    files = sorted((ROOT / "docs").glob("*.md"))
    if (ROOT / "README.md").exists():
        files.insert(0, ROOT / "README.md")
    paragraphs = []
    for f in files:
        paragraphs += [p.strip() for p in f.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    return paragraphs


def text_generate(paragraphs, count, seed):
    """`count` paragraphs sampled from a word-bigram model of `paragraphs`: unlimited text with the
    docs' vocabulary and local statistics, repetitive enough that a tiny student's updates carry
    over from training blocks to the held-out one."""
    rng = random.Random(seed)
    follow = {}
    for p in paragraphs:
        words = p.split()
        for a, b in zip(words, words[1:]):
            follow.setdefault(a, []).append(b)
    starts = [p.split()[0] for p in paragraphs]
    out = []
    for _ in range(count):
        w = rng.choice(starts)
        words = [w]
        for _ in range(rng.randint(30, 120)):
            w = rng.choice(follow.get(w) or starts)
            words.append(w)
        out.append(" ".join(words))
    return out


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--data", help="also write the training text here as JSONL")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--paragraphs", type=int, default=2000, help="generated paragraphs of text")
    args = ap.parse_args()
    texts = text_generate(repo_paragraphs(), args.paragraphs, args.seed)
    teacher_make(args.out_dir, texts, seed=args.seed)
    if args.data:
        data_write(args.data, texts)
    print(f"make_demo_teacher: wrote {args.out_dir} ({len(texts)} generated paragraphs)")


if __name__ == "__main__":
    main()
