#!/usr/bin/env python3
"""Builds a LAMBADA-style last-word cloze task (docs/eval.md schema: context + continuation) from a
held-out JSONL corpus (`text` field), for the small-scale experiment (experiments/experiment.sh).

Each passage is a run of whole sentences from one document, 40-160 words long, whose last word is
alphabetic and at least 3 letters; the continuation is that word (sentence punctuation dropped, as
LAMBADA's), the context everything before it. Deterministic for a given seed.

    experiments/make_cloze.py build/corpus/heldout.jsonl -o build/experiment/cloze.jsonl [--count 500]
"""
import argparse
import json
import random
import re
import sys
from pathlib import Path

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def passages(text, rng, min_words=40, max_words=160):
    sentences = [s.strip() for s in SENTENCE_END.split(" ".join(text.split())) if s.strip()]
    i = 0
    while i < len(sentences):
        target = rng.randint(min_words, max_words)
        chunk, words = [], 0
        while i < len(sentences) and words < target:
            chunk.append(sentences[i])
            words += len(sentences[i].split())
            i += 1
        if words < min_words:
            continue
        passage = " ".join(chunk).rstrip(".!?;:,\"')")
        context, _, last = passage.rpartition(" ")
        if context and last.isalpha() and len(last) >= 3:
            yield {"context": context, "continuation": last}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("heldout")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    docs = []
    with open(args.heldout, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if line.strip():
                try:
                    docs.append(json.loads(line)["text"])
                except (ValueError, KeyError) as e:
                    sys.exit(f"make_cloze: {args.heldout}:{line_no}: not a JSON object with a text field ({e})")
    items = [p for d in docs for p in passages(d, rng)]
    rng.shuffle(items)
    items = items[:args.count]
    if not items:
        sys.exit(f"make_cloze: no passage found in {args.heldout}")
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in items), encoding="utf-8")
    tmp.replace(out)
    print(f"make_cloze: {len(items)} passages from {len(docs)} documents -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
