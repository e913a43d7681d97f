"""experiments/make_choice.py on fresh random corpora: every item's right answer is the sentence that
follows its context in one document, the distractors are other sentences (of the same document when
it has enough), the schema is the one `linear-ard eval tasks` reads (checked by its parser on a tiny
model), determinism per seed, the answer's position spread over the choices, and errors naming the
problem."""
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
import make_choice  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "python"))
import tiny_teacher  # noqa: E402
from script_tool import script_run  # noqa: E402

WORDS = "alpha beta gamma delta river stone light paper window engine garden silver quiet north".split()


def sentence(rng):
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 30))]
    return " ".join(words).capitalize() + rng.choice(".!?")


def corpus(path, rng, docs, sentences):
    texts = [" ".join(sentence(rng) for _ in range(rng.randint(*sentences))) for _ in range(docs)]
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return texts


def run(*args):
    return script_run("experiments/make_choice.py", *args)


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_answers_follow_their_context_and_distractors_do_not(tmp_path):
    rng = random.Random()
    texts = corpus(tmp_path / "c.jsonl", rng, docs=12, sentences=(60, 120))
    n_choices = rng.randint(2, 5)
    r = run(tmp_path / "c.jsonl", "-o", tmp_path / "q.jsonl", "--count", 60, "--choices", n_choices,
            "--seed", rng.randrange(1000))
    assert r.returncode == 0, r.stderr
    items = read(tmp_path / "q.jsonl")
    assert len(items) == 60
    docs = [make_choice.sentences_of(t) for t in texts]
    for item in items:
        assert set(item) == {"context", "choices", "gold"}
        assert len(item["choices"]) == n_choices and 0 <= item["gold"] < n_choices
        answer = item["choices"][item["gold"]]
        # The context is a run of whole sentences of one document and the answer the next one.
        hits = [(d, i) for d, s in enumerate(docs) for i in range(1, len(s))
                if s[i] == answer and any(" ".join(s[k:i]) == item["context"] for k in range(i))]
        assert hits, item
        d, i = hits[0]
        assert 40 <= len(item["context"].split())
        for j, c in enumerate(item["choices"]):
            assert 5 <= len(c.split()) <= 60
            if j != item["gold"]:
                assert c != answer and c in docs[d]  # long documents: distractors from the same one
                assert min(abs(k - i) for k, s in enumerate(docs[d]) if s == c) >= 5
    golds = [item["gold"] for item in items]
    assert len(set(golds)) > 1


def test_short_documents_borrow_distractors_and_seed_decides(tmp_path):
    rng = random.Random()
    corpus(tmp_path / "c.jsonl", rng, docs=40, sentences=(9, 12))
    a, b, c = (tmp_path / f"{x}.jsonl" for x in "abc")
    assert run(tmp_path / "c.jsonl", "-o", a, "--count", 10, "--seed", 3).returncode == 0
    assert run(tmp_path / "c.jsonl", "-o", b, "--count", 10, "--seed", 3).returncode == 0
    assert run(tmp_path / "c.jsonl", "-o", c, "--count", 10, "--seed", 4).returncode == 0
    assert a.read_text() == b.read_text() and a.read_text() != c.read_text()
    for item in read(a):
        assert len(set(item["choices"])) == len(item["choices"])


def test_the_eval_task_parser_reads_the_file(tmp_path):
    build = os.environ.get("LINEAR_ARD_BUILD_DIR")
    if not build:
        pytest.skip("LINEAR_ARD_BUILD_DIR is not set (scripts/test.sh sets it to the build folder)")
    rng = random.Random()
    texts = corpus(tmp_path / "c.jsonl", rng, docs=6, sentences=(60, 80))
    assert run(tmp_path / "c.jsonl", "-o", tmp_path / "q.jsonl", "--count", 3).returncode == 0
    model = tiny_teacher.teacher_make(tmp_path / "model", texts, hidden=32, intermediate=64, layers=1, heads=2,
                                      kv_heads=1, vocab_size=300, max_positions=1024, seed=rng.randrange(1000))
    r = subprocess.run([str(Path(build) / "src" / "cli" / "linear-ard"), "eval", "tasks", str(model), "--tasks", str(tmp_path / "q.jsonl"),
                        "--device", "cpu", "--dtype", "fp32"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    row = r.stdout.splitlines()[2].strip("|").split("|")
    assert "| model | q |" in r.stdout and float(row[1]) in (0.0, 33.33, 66.67, 100.0)  # 3 items scored


@pytest.mark.parametrize("case", ["missing", "not_json", "no_text", "too_few", "bad_count"])
def test_errors_name_the_problem(tmp_path, case):
    path = tmp_path / "c.jsonl"
    args = [path, "-o", tmp_path / "q.jsonl"]
    if case == "not_json":
        path.write_text('{"text": "a b c."}\nnot json\n')
        expect = "c.jsonl:2"
    elif case == "no_text":
        path.write_text('{"body": "a b c."}\n')
        expect = "c.jsonl:1"
    elif case == "too_few":
        corpus(path, random.Random(), docs=2, sentences=(10, 12))
        args += ["--count", 1000]
        expect = "fewer than --count 1000"
    elif case == "bad_count":
        corpus(path, random.Random(), docs=2, sentences=(10, 12))
        args += ["--choices", 1]
        expect = "--choices >= 2"
    else:
        expect = "cannot read"
    r = run(*args)
    assert r.returncode != 0 and expect in r.stderr
    assert not (tmp_path / "q.jsonl").exists()
