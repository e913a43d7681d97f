"""`linear-ard eval passkey` on a model that has learnt to retrieve (a model that sees the
needle answers it, one that has not does not).

A tiny LLaMA (2 layers, hidden 64) is trained here with transformers for a few hundred steps on
passkey prompts written exactly as src/eval/passkey.cpp writes them (intro, filler, needle at a
random depth, filler, question), with the loss on the answer (" KEY</s>") only: it learns to copy
the number (an induction head). Then our binary builds its own prompts with another seed and
decodes greedily with the KV cache: the trained model must find most keys, the same model untrained
none. ~40 s on 2 CPU cores.
"""

import json
import random

import torch
import transformers

from test_eval import cli  # also puts tests/python on sys.path

import tiny_teacher  # noqa: E402

INTRO = ("There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. "
         "I will quiz you about the important information there.")
FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
QUESTION = "What is the pass key? The pass key is"


def passkey_text(n, depth, key):
    """The prompt text of src/eval/passkey.cpp (passkey_text) for n fillers."""
    before = int(n * depth + 0.5)
    rep = lambda k: " ".join([FILLER] * k)  # noqa: E731
    return (f"{INTRO}\n{rep(before)}\nThe pass key is {key}. Remember it. {key} is the pass key.\n"
            f"{rep(n - before)}\n{QUESTION}")


def train_retriever(folder, steps, seed=0):
    rng = random.Random(seed)
    corpus = [passkey_text(rng.randint(0, 3), rng.random(), str(rng.randint(1, 50000))) for _ in range(300)]
    corpus += [" ".join(str(rng.randint(0, 9)) for _ in range(50)) for _ in range(50)]
    tok = tiny_teacher.tokenizer_train(corpus, 320, folder)
    eos = tok.token_to_id("</s>")
    config = transformers.LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                                      max_position_embeddings=256, bos_token_id=tok.token_to_id("<s>"),
                                      eos_token_id=eos, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    if steps:
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.1, 1 - s / steps))
        for _ in range(steps):
            seqs, masks = [], []
            for _ in range(32):
                key = str(rng.randint(1, 50000))
                prompt = tok.encode(passkey_text(rng.randint(0, 2), rng.random(), key)).ids
                answer = tok.encode(" " + key, add_special_tokens=False).ids + [eos]
                seqs.append(prompt + answer)
                masks.append([0] * len(prompt) + [1] * len(answer))
            width = max(map(len, seqs))
            ids = torch.tensor([s + [eos] * (width - len(s)) for s in seqs])
            mask = torch.tensor([m + [0] * (width - len(m)) for m in masks], dtype=torch.float32)[:, 1:]
            logits = model(ids).logits[:, :-1]
            nll = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1),
                                                    reduction="none")
            loss = (nll * mask.reshape(-1)).sum() / mask.sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    model.save_pretrained(str(folder))
    return folder


def passkey_accuracy(folder, out):
    cli("passkey", folder, "--lengths", 150, 190, "--depths", 0, 0.5, 1, "--samples", 3, "--seed", 11,
        "--max-new-tokens", 8, "--device", "cpu", "--dtype", "fp32", "-o", out)
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    for row in rows:  # the prompts are the ones the model was trained on, in form and length
        for p in row["prompts"]:
            assert f"The pass key is {p['passkey']}. Remember it." in p["text"] and p["tokens"] <= row["length"]
    return sum(r["accuracy"] * r["samples"] for r in rows) / sum(r["samples"] for r in rows)


def test_a_model_that_sees_the_needle_answers_it(tmp_path):
    trained = passkey_accuracy(train_retriever(tmp_path / "trained", steps=350), tmp_path / "trained_pk")
    untrained = passkey_accuracy(train_retriever(tmp_path / "untrained", steps=0), tmp_path / "untrained_pk")
    # Measured on a 2-core x86-64 machine after 350 steps (keys 1..50000 drawn by our binary's seed):
    # 0.89 of 18 prompts (0.94 and 0.83 with training seeds 1 and 2; 0.94 after 700 steps); an
    # untrained model cannot guess a 1-in-50000 key.
    assert trained >= 0.5, f"the trained model retrieved only {trained:.0%} of the passkeys"
    assert untrained == 0.0, f"the untrained model 'retrieved' {untrained:.0%}"
