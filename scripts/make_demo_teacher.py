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
import math
import random
import time
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


def text_generate(paragraphs, count, seed, repeat=False):
    """`count` paragraphs sampled from a word-bigram model of `paragraphs`: unlimited text with the
    docs' vocabulary and local statistics, repetitive enough that a tiny student's updates carry
    over from training blocks to the held-out one. With `repeat`, each paragraph also ends with a
    verbatim copy of one of its own earlier spans (8-30 words), a copy pattern that a small model
    learns quickly and that needs fine relative positions (previous-token / induction heads)."""
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
        if repeat:
            n = rng.randint(8, min(30, len(words)))
            i = rng.randint(0, len(words) - n)
            words += words[i:i + n]
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


def teacher_pretrain(out_dir, texts, steps, *, ctx_len=256, batch_size=8, lr=2e-3, warmup=30,
                     seed=0, threads=2, log_every=50):
    """Pretrains the teacher saved in out_dir in place: AdamW, next-token loss on `texts` tokenised
    as linear-ard does (BOS per document, EOS after it, concatenated, cut into ctx_len blocks),
    cosine schedule, deterministic for a given seed. The first block is left out, as it is the
    block `linear-ard restore` holds out for evaluation. Returns the final mean training loss."""
    out_dir = Path(out_dir)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    tok = Tokenizer.from_file(str(out_dir / "tokenizer.json"))
    eos = tok.token_to_id(EOS)
    ids = []
    for enc in tok.encode_batch(texts):
        ids += enc.ids + [eos]
    n_blocks = len(ids) // ctx_len
    blocks = torch.tensor(ids[:n_blocks * ctx_len]).view(n_blocks, ctx_len)[1:]
    model = transformers.LlamaForCausalLM.from_pretrained(str(out_dir), torch_dtype=torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) * (
        0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, s / max(1, steps))))))
    gen = torch.Generator().manual_seed(seed)
    start, running = time.time(), []
    for step in range(1, steps + 1):
        batch = blocks[torch.randint(len(blocks), (batch_size,), generator=gen)]
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        running.append(loss.item())
        if step % log_every == 0 or step == steps:
            mean = sum(running) / len(running)
            print(f"make_demo_teacher: pretrain step {step}/{steps} loss {mean:.3f} "
                  f"({time.time() - start:.0f} s)", flush=True)
            running = []
    model.eval()
    model.save_pretrained(str(out_dir))
    return mean


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
    ap.add_argument("--pretrain-steps", type=int, default=0,
                    help="pretrain the teacher for this many AdamW steps (0: keep random weights); "
                         "also makes every paragraph end with a copy of one of its own spans")
    ap.add_argument("--pretrain-batch", type=int, default=8, help="blocks of 256 tokens per step")
    ap.add_argument("--pretrain-lr", type=float, default=2e-3)
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads for pretraining")
    args = ap.parse_args()
    pretrain = args.pretrain_steps > 0
    texts = text_generate(repo_paragraphs(), args.paragraphs, args.seed, repeat=pretrain)
    teacher_make(args.out_dir, texts, seed=args.seed)
    loss = None
    if pretrain:
        loss = teacher_pretrain(args.out_dir, texts, args.pretrain_steps, batch_size=args.pretrain_batch,
                                lr=args.pretrain_lr, seed=args.seed, threads=args.threads)
    if args.data:
        data_write(args.data, texts)
    # Marker read by scripts/demo.sh, so that a teacher built with other settings is rebuilt.
    (Path(args.out_dir) / "demo_teacher.json").write_text(json.dumps(
        {"seed": args.seed, "paragraphs": args.paragraphs, "repeat_spans": pretrain,
         "pretrain_steps": args.pretrain_steps, "pretrain_batch": args.pretrain_batch,
         "pretrain_lr": args.pretrain_lr, "final_train_loss": loss}, indent=2) + "\n")
    print(f"make_demo_teacher: wrote {args.out_dir} ({len(texts)} generated paragraphs, "
          f"{args.pretrain_steps} pretraining steps)")


if __name__ == "__main__":
    main()
