#!/usr/bin/env python3
"""The demo's held-out text: the first documents of a JSONL file ({"text": ...} per line) up to about
TOKENS tokens (4 UTF-8 bytes per token, English prose through a byte-level BPE), whole documents
only; TOKENS 0 keeps them all.

    scripts/demo_text.py IN.jsonl OUT.jsonl --tokens 8192
"""
import argparse
import json
import os

BYTES_PER_TOKEN = 4


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--tokens", type=int, default=0, help="about this many tokens; 0: all")
    args = p.parse_args()
    budget = args.tokens * BYTES_PER_TOKEN
    kept, size = [], 0
    with open(args.src, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            text = json.loads(line)["text"]
            kept.append(json.dumps({"text": text}, ensure_ascii=False))
            size += len(text.encode())
            if budget and size >= budget:
                break
    if not kept:
        raise SystemExit(f"demo_text: {args.src}: no documents")
    tmp = f"{args.dst}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(kept) + "\n")
    os.replace(tmp, args.dst)


if __name__ == "__main__":
    main()
