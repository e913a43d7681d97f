#!/usr/bin/env python3
"""Builds a multiple-choice "which sentence comes next" task (docs/eval.md schema: context + choices +
gold, scored by `linear-ard eval tasks` as lm-evaluation-harness scores HellaSwag: acc and acc_norm)
from a held-out JSONL corpus (`text` field), for the real-model experiment (experiments/experiment_real.sh).

Each item: a run of whole sentences from one document (40-160 words) as the context, the sentence
that follows it in the document as the right answer, and distractors that are other sentences of
the same document (at least --gap sentences away from the answer, so they share its topic and
vocabulary), of 5-60 words each; a document too short for that gives its distractors from other
documents. The answer's position among the choices is drawn at random. Deterministic for a seed.

    experiments/make_choice.py test.jsonl -o choice.jsonl [--count 500] [--choices 4] [--seed 0]
"""
import argparse
import json
import os
import random
import re
import sys

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MIN_WORDS, MAX_WORDS = 5, 60


def sentences_of(text):
    return [s.strip() for s in SENTENCE_END.split(" ".join(text.split())) if s.strip()]


def usable(sentence):
    return MIN_WORDS <= len(sentence.split()) <= MAX_WORDS


def candidates(docs, rng, min_words=40, max_words=160):
    """(doc index, index of the answer sentence, context): a context of whole sentences followed by a
    usable answer, taken in order through each document with a random context length."""
    for d, sents in enumerate(docs):
        i = 0
        while i < len(sents):
            target = rng.randint(min_words, max_words)
            start, words = i, 0
            while i < len(sents) and words < target:
                words += len(sents[i].split())
                i += 1
            if words >= min_words and i < len(sents) and usable(sents[i]):
                yield d, i, " ".join(sents[start:i])
            i += 1  # the answer is not part of the next context


def distractors(docs, d, answer, k, gap, rng):
    """k usable sentences of document d at least `gap` sentences from `answer` (other documents'
    when d has too few), none equal to the answer."""
    sents, right = docs[d], docs[d][answer]
    pool = [s for j, s in enumerate(sents) if abs(j - answer) >= gap and usable(s) and s != right]
    pool = list(dict.fromkeys(pool))
    if len(pool) < k:
        others = [s for e, ss in enumerate(docs) if e != d for s in ss if usable(s) and s != right]
        pool += rng.sample(others, min(len(others), 20 * k))
        pool = list(dict.fromkeys(pool))
    return rng.sample(pool, k) if len(pool) >= k else None


def build(docs, count, n_choices, gap, seed):
    rng = random.Random(seed)
    items = []
    for d, answer, context in candidates(docs, rng):
        wrong = distractors(docs, d, answer, n_choices - 1, gap, rng)
        if wrong is None:
            continue
        gold = rng.randrange(n_choices)
        items.append({"context": context, "choices": wrong[:gold] + [docs[d][answer]] + wrong[gold:], "gold": gold})
    rng.shuffle(items)
    return items[:count]


def read_docs(path):
    docs = []
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    text = json.loads(line)["text"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    sys.exit(f"make_choice: {path}:{n}: not a JSON object with a \"text\" string")
                if not isinstance(text, str):
                    sys.exit(f"make_choice: {path}:{n}: \"text\" is not a string")
                docs.append(sentences_of(text))
    except OSError as e:
        sys.exit(f"make_choice: cannot read {path}: {e}")
    return docs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", help="JSONL with a \"text\" field per document")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--choices", type=int, default=4)
    ap.add_argument("--gap", type=int, default=5, help="distractors at least this many sentences from the answer")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.count < 1 or args.choices < 2 or args.gap < 1:
        sys.exit("make_choice: --count must be >= 1, --choices >= 2 and --gap >= 1")
    items = build(read_docs(args.corpus), args.count, args.choices, args.gap, args.seed)
    if len(items) < args.count:
        sys.exit(f"make_choice: {args.corpus} gives only {len(items)} items, fewer than --count {args.count}")
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")
    os.replace(tmp, args.output)
    print(f"make_choice: {len(items)} items, {args.choices} choices each -> {args.output}")


if __name__ == "__main__":
    main()
