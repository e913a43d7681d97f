#!/usr/bin/env python3
"""Converts the usual public files of the paper's short-text benchmarks into linear-ard task JSONL
(docs/eval.md: {"context", "choices", "gold"} or {"context", "continuation"} per line), with
lm-evaluation-harness's prompt templates. You bring the data; nothing is downloaded.

    scripts/convert_tasks.py DATASET INPUT [INPUT ...] -o OUT.jsonl

DATASET and the files it reads:
  mmlu      data/test/*_test.csv (question, A, B, C, D, answer letter; no header)
  boolq     BoolQ dev.jsonl (question, passage, answer true/false)
  piqa      valid.jsonl (goal, sol1, sol2) and valid-labels.lst
  arc       ARC-Challenge-Test.jsonl / ARC-Easy-Test.jsonl (question.stem, question.choices, answerKey)
  obqa      OpenBookQA test.jsonl (same layout as ARC)
  siqa      socialiqa dev.jsonl (context, question, answerA/B/C) and dev-labels.lst (1-based)
  mathqa    MathQA test.json (Problem, options, correct)
  lambada   lambada_test.jsonl ({"text"}), the OpenAI version the harness's lambada_openai uses
"""

import argparse
import csv
import json
import re
import sys
from pathlib import Path


def jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def labels(path):
    return [int(x) for x in Path(path).read_text().split()]


def mmlu(files):
    for path in files:
        subject = Path(path).stem.replace("_test", "").replace("_", " ")
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.reader(f):
                question, options, answer = row[0], row[1:5], row[5]
                # The harness's per-subject description, kept in the context (zero-shot layout).
                context = (f"The following are multiple choice questions (with answers) about {subject}.\n\n"
                           f"{question.strip()}\n" +
                           "".join(f"{k}. {o}\n" for k, o in zip("ABCD", options)) + "Answer:")
                yield {"context": context, "choices": list("ABCD"), "gold": "ABCD".index(answer.strip())}


def boolq(files):
    for path in files:
        for d in jsonl(path):
            yield {"context": f"{d['passage']}\nQuestion: {d['question']}?\nAnswer:", "choices": ["no", "yes"],
                   "gold": int(bool(d["answer"]))}


def piqa(files):
    docs, golds = jsonl(files[0]), labels(files[1])
    for d, g in zip(docs, golds, strict=True):
        yield {"context": f"Question: {d['goal']}\nAnswer:", "choices": [d["sol1"], d["sol2"]], "gold": g}


def arc_like(files, template):
    for path in files:
        for d in jsonl(path):
            q = d["question"]
            keys = [c["label"] for c in q["choices"]]
            yield {"context": template.format(q["stem"]), "choices": [c["text"] for c in q["choices"]],
                   "gold": keys.index(d["answerKey"])}


def siqa(files):
    docs, golds = jsonl(files[0]), labels(files[1])
    for d, g in zip(docs, golds, strict=True):
        yield {"context": f"Q: {d['context']} {d['question']}\nA:",
               "choices": [d["answerA"], d["answerB"], d["answerC"]], "gold": g - 1}


def mathqa(files):
    for path in files:
        for d in json.loads(Path(path).read_text(encoding="utf-8")):
            choices = [c[4:].rstrip(" ,") for c in re.findall(r"[abcd] \) .*?, |e \) .*?$", d["options"])]
            yield {"context": f"Question: {d['Problem']}\nAnswer:", "choices": choices,
                   "gold": "abcde".index(d["correct"])}


def lambada(files):
    for path in files:
        for d in jsonl(path):
            context, word = d["text"].rsplit(" ", 1)
            yield {"context": context, "continuation": word}


CONVERTERS = {
    "mmlu": mmlu, "boolq": boolq, "piqa": piqa, "siqa": siqa, "mathqa": mathqa, "lambada": lambada,
    "arc": lambda f: arc_like(f, "Question: {}\nAnswer:"), "obqa": lambda f: arc_like(f, "{}"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", choices=sorted(CONVERTERS))
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    docs = list(CONVERTERS[args.dataset](args.inputs))
    Path(args.output).write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    print(f"convert_tasks: {len(docs)} {args.dataset} docs -> {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
