#!/usr/bin/env python3
"""Splits the Debian-package corpus (scripts/make_corpus.sh, build/corpus) BY SOURCE, for the main
job on a GPU (scripts/demo.sh) and the real-model experiments, so that short-context quality is
measured on text from sources no run trained on (domain adaptation cannot pass for restoration):

    OUT/train.jsonl        training sources' train documents (what every method trains on)
    OUT/val.jsonl          training sources' held-out documents (the run's validation, the searches)
    OUT/test.jsonl         the test sources, every document, joined in order into documents of
                           about --doc-bytes (so perplexity at 8K has full windows)
    OUT/split.json         which source went where, with byte counts

    scripts/corpus_split.py build/corpus OUT [--test-sources jargon gnu-standards]
"""
import argparse
import json
import os
from collections import Counter
from pathlib import Path


def read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write(path, docs):
    tmp = path.with_suffix(f".tmp.{os.getpid()}")
    with tmp.open("w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    tmp.replace(path)


def joined(docs, size):
    """Consecutive documents of one source joined with blank lines into pieces of >= size bytes."""
    out, cur, n, source = [], [], 0, None
    for d in docs:
        if cur and (d["source"] != source or n >= size):
            out.append({"text": "\n\n".join(cur), "source": source})
            cur, n = [], 0
        cur.append(d["text"])
        n += len(d["text"].encode())
        source = d["source"]
    if cur:
        out.append({"text": "\n\n".join(cur), "source": source})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus")
    p.add_argument("out")
    p.add_argument("--test-sources", nargs="+", default=["jargon", "gnu-standards"])
    p.add_argument("--doc-bytes", type=int, default=96 * 1024)
    args = p.parse_args()
    corpus, out = Path(args.corpus), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    train, held = read(corpus / "train.jsonl"), read(corpus / "heldout.jsonl")
    if any("source" not in d for d in train[:1] + held[:1]):
        raise SystemExit(f"{corpus}: documents have no 'source' (rebuild it with scripts/make_corpus.sh)")
    test_sources = set(args.test_sources)
    unknown = test_sources - {d["source"] for d in train + held}
    if unknown:
        raise SystemExit(f"unknown test source(s): {', '.join(sorted(unknown))}")
    splits = {
        "train": [d for d in train if d["source"] not in test_sources],
        "val": [d for d in held if d["source"] not in test_sources],
        "test": joined(sorted((d for d in train + held if d["source"] in test_sources),
                              key=lambda d: d["source"]), args.doc_bytes),
    }
    summary = {}
    for name, docs in splits.items():
        write(out / f"{name}.jsonl", docs)
        size = Counter()
        for d in docs:
            size[d["source"]] += len(d["text"].encode())
        summary[name] = {"documents": len(docs), "bytes_by_source": dict(size)}
        print(f"corpus_split: {name:5s} {len(docs):6d} docs {sum(size.values()) / 1e6:6.2f} MB "
              f"({', '.join(sorted(size))})")
    (out / "split.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
