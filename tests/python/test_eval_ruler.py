"""Tests of `linear-ard eval ruler` and `eval compare` on CPU with a tiny random LLaMA and its
byte-level BPE tokenizer (tests/python/tiny_teacher.py): prompts against RULER's templates, token
counts against HF tokenizers, answers recomputed from each prompt's own text, scores against
RULER's scoring rules (tests/python/ruler_reference.py), determinism, bad inputs, and the comparison
report.

    LINEAR_ARD_BUILD_DIR=$PWD/build-eval pytest -q tests/python/test_eval_ruler.py
"""

import json
import random
import shutil

import pytest
from tokenizers import Tokenizer

from test_eval import WORDS, cli, device_args, jsonl_write, mc_doc  # also puts scripts/ on sys.path

import tiny_teacher  # noqa: E402
import ruler_reference as rr  # noqa: E402

LENGTHS = (1400, 2000)  # cwe's one-shot example alone is ~1.2K tokens with this 600-token vocabulary


def essay_text(rng):
    sentences = []
    for _ in range(400):
        words = [rng.choice(WORDS) for _ in range(rng.randint(4, 12))]
        sentences.append(" ".join(words).capitalize() + rng.choice([".", ".", "!", "?"]))
    return " ".join(sentences)


@pytest.fixture(scope="module")
def ruler_setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("ruler")
    rng = random.Random(0)
    words = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(4, 7)))
                    for _ in range(200)})
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) + "." for _ in range(200)]
    texts += [rr.NOISE, "One of the special magic numbers for", "Document", "VAR"] * 10 + [" ".join(words)] * 10
    folder = tiny_teacher.teacher_make(root / "model", texts, hidden=64, intermediate=128, layers=2, heads=4,
                                            kv_heads=2, max_positions=2048, vocab_size=600, qk_std=0.15, seed=0)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    (root / "words.txt").write_text("\n".join(words) + "\n")
    (root / "essay.txt").write_text(essay_text(rng))
    # Enough documents to fill the longest length (a QA haystack that runs out is refused).
    paragraphs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 40))) + "." for _ in range(72)]
    squad = {"data": [{"paragraphs": [{"context": p, "qas": [
        {"question": f"What is item {a}-{i}?", "answers": [{"text": p.split()[2]}], "is_impossible": False},
        {"question": "Unanswerable?", "answers": [], "is_impossible": True}]} for i, p in enumerate(paragraphs[a::3])]}
        for a in range(3)]}
    (root / "squad.json").write_text(json.dumps(squad))
    hotpot = [{"question": f"Which {i}?", "answer": paragraphs[i].split()[1],
               "context": [[f"Title {i}", [paragraphs[i]]], [f"Other {i}", [paragraphs[(i + 5) % 72], " more."]]]}
              for i in range(72)]
    (root / "hotpot.json").write_text(json.dumps(hotpot))
    return root, folder, tok


def data_args(root):
    return ["--words", root / "words.txt", "--haystack", root / "essay.txt", "--squad", root / "squad.json",
            "--hotpotqa", root / "hotpot.json"]


@pytest.fixture(scope="module")
def ruler_report(ruler_setup):
    root, folder, _ = ruler_setup
    out = root / "ruler"
    cli("ruler", folder, "--lengths", *LENGTHS, "--samples", 2, "--quiet", "-o", out, *data_args(root), *device_args())
    return json.loads(out.with_suffix(".json").read_text()), out


def test_ruler_prompts_fit_and_answers_are_right(ruler_setup, ruler_report):
    root, folder, tok = ruler_setup
    report, _ = ruler_report
    assert report["tasks"] == list(rr.NIAH_TASKS) + ["vt", "cwe", "fwe", "qa_1", "qa_2"]
    squad = json.loads((root / "squad.json").read_text())
    qas = {q["question"]: ([a["text"] for a in q["answers"]], p["context"])
           for art in squad["data"] for p in art["paragraphs"] for q in p["qas"] if not q["is_impossible"]}
    hotpot = {h["question"]: ([h["answer"]], f"{h['context'][0][0]}\n{''.join(h['context'][0][1])}")
              for h in json.loads((root / "hotpot.json").read_text())}
    assert len(report["samples"]) == len(report["tasks"]) * len(LENGTHS) * 2
    for s in report["samples"]:
        task, prompt = s["task"], s["prompt"]
        ids = tok.encode(prompt).ids
        budget = s["length"] - rr.max_new_tokens(task)
        assert len(ids) == s["tokens"] <= budget, (task, s["tokens"], budget)
        # The haystack was grown as far as it fits: one more unit would not (units are at most a few
        # dozen tokens here; a QA document and niah_multikey_3's line of two UUIDs, ~80 tokens with
        # this 600-token vocabulary, are the largest).
        slack = 100 if task.startswith("qa") or task == "niah_multikey_3" else 45
        assert s["tokens"] > budget - slack, (task, s["length"], s["tokens"])
        if task in rr.NIAH_TASKS:
            # Order is free (string_match_all): multivalue's values are listed as drawn, the prompt
            # places them at random depths.
            assert sorted(s["answers"]) == sorted(rr.niah_answers(task, prompt)), task
            hay = rr.NIAH_TASKS[task][0]
            assert s["haystack_type"] == hay
            if hay == "noise":
                assert rr.NOISE in prompt
        elif task == "vt":
            assert sorted(s["answers"]) == sorted(rr.vt_answers(prompt)) and len(s["answers"]) == 5
        elif task == "cwe":
            assert sorted(s["answers"]) == sorted(rr.cwe_answers(prompt))
        elif task == "fwe":
            assert sorted(s["answers"]) == sorted(rr.fwe_answers(prompt))
        else:
            ref = qas if task == "qa_1" else hotpot
            question = prompt.split("Question: ")[-1].split(" Answer:")[0]
            answers, gold = ref[question]
            assert s["answers"] == answers and gold in prompt
            assert prompt.endswith(f"Question: {question} Answer:")


def test_ruler_scores_follow_rulers_rules(ruler_report):
    report, out = ruler_report
    cells = {}
    for s in report["samples"]:
        match = rr.string_match_part if s["task"].startswith("qa") else rr.string_match_all
        assert s["score"] == pytest.approx(100 * match(rr.postprocess(s["output"]), s["answers"]))
        cells.setdefault((s["task"], s["length"]), []).append(s["score"])
    for (task, length), scores in cells.items():
        assert report["scores"][task][str(length)] == pytest.approx(sum(scores) / len(scores))
    for length in LENGTHS:
        per = [report["scores"][t][str(length)] for t in report["tasks"]]
        assert report["avg"][str(length)] == pytest.approx(sum(per) / len(per))
    assert report["avg_all"] == pytest.approx(sum(report["avg"].values()) / len(LENGTHS))
    assert report["prefill_tokens_per_s"] > 0 and report["decode_tokens_per_s"] > 0
    md = out.with_suffix(".md").read_text()
    assert "| Avg. all |" in md and "| niah_multikey_3 |" in md and "prefill tok/s" in md


def test_ruler_is_seeded(ruler_setup, ruler_report):
    root, folder, _ = ruler_setup
    report, _ = ruler_report
    tasks = ["niah_single_2", "vt", "cwe", "qa_2"]
    runs = []
    for seed in (42, 42, 7):
        out = root / f"seeded_{seed}_{len(runs)}"
        cli("ruler", folder, "--lengths", LENGTHS[0], "--samples", 2, "--tasks", *tasks, "--seed", seed, "--quiet",
            "-o", out, *data_args(root), *device_args())
        runs.append(json.loads(out.with_suffix(".json").read_text())["samples"])
    assert runs[0] == runs[1]
    assert [s["prompt"] for s in runs[0]] != [s["prompt"] for s in runs[2]]
    # A sample depends on (seed, task, length, index) only: the full run holds the same ones.
    full = {(s["task"], s["length"], s["index"]): s for s in report["samples"]}
    for s in runs[0]:
        assert s == full[(s["task"], s["length"], s["index"])]
    # Different samples of one cell differ.
    assert runs[0][0]["prompt"] != runs[0][1]["prompt"]


BAD = {
    "squad_missing_question": ("squad.json", json.dumps({"data": [{"paragraphs": [{"context": "c", "qas": [
        {"question": "q", "answers": [{"text": "a"}]}, {"answers": [{"text": "a"}]}]}]}]}),
        ["--squad"], "data[0].paragraphs[0].qas[1]: missing string field \"question\""),
    "squad_not_json": ("squad.json", "{\"data\": [", ["--squad"], "not valid JSON"),
    "hotpot_bad_context": ("hotpot.json", json.dumps([{"question": "q", "answer": "a", "context": [["t", ["s"]], ["u"]]}]),
                           ["--hotpotqa"], "[0].context[1]: expected [title, [sentence, ...]]"),
    "words_two_per_line": ("words.txt", "alpha\nbeta\ngamma delta\n", ["--words"], "words.txt:3: one word per line"),
    "haystack_empty": ("essay.txt", " \n\t\n", ["--haystack"], "holds no text"),
    "haystack_empty_records": ("essay.jsonl", "{\"text\": \" \"}\n", ["--haystack"], "has no words"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_ruler_bad_files_name_the_place(ruler_setup, case, tmp_path):
    _, folder, _ = ruler_setup
    name, content, flag, message = BAD[case]
    path = tmp_path / name
    path.write_text(content)
    out = tmp_path / "out"
    r = cli("ruler", folder, "--lengths", 700, *flag, path, "-o", out, *device_args(), ok=False)
    assert r.returncode != 0 and str(path) in r.stderr and message in r.stderr, r.stderr
    assert not list(tmp_path.glob("out*")), "a failed run left output files"


@pytest.mark.parametrize("args,message", [
    (["--tasks", "niah_single_9"], "unknown RULER task 'niah_single_9' (known: niah_single_1"),
    (["--tasks", "qa_1"], "task qa_1 needs the squad JSON file (--squad)"),
    (["--lengths", 100, "--tasks", "niah_single_1"], "niah_single_1: length 100 is too short"),
])
def test_ruler_bad_options_are_clear(ruler_setup, args, message, tmp_path):
    _, folder, _ = ruler_setup
    lengths = [] if "--lengths" in args else ["--lengths", 700]
    r = cli("ruler", folder, *lengths, *args, "-o", tmp_path / "out", *device_args(), ok=False)
    assert r.returncode != 0 and message in r.stderr, r.stderr
    assert not list(tmp_path.glob("out*"))


# How RULER's answer prefixes start (constants.py), which prepare.py splits off the prompt.
ANSWER_PREFIX_START = {"niah_single_1": "The special magic", "vt": "Answer:", "qa_1": "Answer:"}


def ruler_prepared_write(root, samples, index_offset=100):
    """Our samples in RULER's prepared layout (<root>/<length>/data/<task>/validation.jsonl, the
    answer prefix split off the prompt at its last occurrence, as RULER's prepare.py does);
    returns the files."""
    files = {}
    for s in samples:
        cut = s["prompt"].rfind(ANSWER_PREFIX_START[s["task"]])
        assert cut > 0, s["task"]
        path = root / str(s["length"]) / "data" / s["task"] / "validation.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"index": index_offset + s["index"], "input": s["prompt"][:cut],
                                "outputs": s["answers"], "length": s["tokens"] + rr.max_new_tokens(s["task"]),
                                "length_w_model_temp": 0, "answer_prefix": s["prompt"][cut:]}) + "\n")
        files[path] = True
    return sorted(files)


def test_ruler_prepared_files_give_the_same_cells(ruler_setup, ruler_report, tmp_path):
    """RULER-prepared JSONL of the samples `eval ruler` generated: the same prompts, token counts,
    outputs and scores, task and length taken from RULER's folder layout, RULER's index kept."""
    _, folder, _ = ruler_setup
    report, _ = ruler_report
    chosen = [s for s in report["samples"] if s["task"] in ("niah_single_1", "vt", "qa_1")]
    files = ruler_prepared_write(tmp_path / "RULER", chosen)
    assert len(files) == 3 * len(LENGTHS)
    out = tmp_path / "prepared"
    cli("ruler", folder, "--prepared", *files, "--quiet", "-o", out, *device_args())
    prepared = json.loads(out.with_suffix(".json").read_text())
    assert sorted(prepared["tasks"]) == ["niah_single_1", "qa_1", "vt"] and prepared["lengths"] == list(LENGTHS)
    by_key = {(s["task"], s["length"], s["index"]): s for s in chosen}
    for s in prepared["samples"]:
        mine = by_key[(s["task"], s["length"], s["index"] - 100)]
        for key in ("prompt", "answers", "tokens", "output", "score"):
            assert s[key] == mine[key], (s["task"], key)
        assert s["haystack_type"] == "prepared"
    for task in prepared["tasks"]:
        for length in LENGTHS:
            assert prepared["scores"][task][str(length)] == report["scores"][task][str(length)]

    # One length for files outside RULER's layout; errors name the file and the line.
    flat = tmp_path / "niah_single_1.jsonl"
    flat.write_text(files[0].read_text())
    r = cli("ruler", folder, "--prepared", flat, "--quiet", *device_args(), ok=False)
    assert r.returncode == 1 and "no folder of the path names the length" in r.stderr, r.stderr
    cli("ruler", folder, "--prepared", flat, "--lengths", 1400, "--quiet", *device_args())
    bad = tmp_path / "1400" / "niah_single_1.jsonl"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"index": 0, "input": "x", "length": 3, "answer_prefix": "y"}) + "\n")
    r = cli("ruler", folder, "--prepared", bad, *device_args(), ok=False)
    assert f"{bad}:1: \"outputs\" must be a non-empty list" in r.stderr, r.stderr
    unknown = tmp_path / "1400" / "data" / "needle" / "validation.jsonl"
    unknown.parent.mkdir(parents=True)
    unknown.write_text(files[0].read_text())
    r = cli("ruler", folder, "--prepared", unknown, *device_args(), ok=False)
    assert "unknown RULER task 'needle'" in r.stderr, r.stderr
    r = cli("ruler", folder, "--prepared", flat, "--tasks", "vt", *device_args(), ok=False)
    assert r.returncode == 2 and "name their own tasks" in r.stderr, r.stderr


def test_compare_report(ruler_setup, ruler_report):
    root, folder, _ = ruler_setup
    scaled = root / "scaled"
    shutil.copytree(folder, scaled)
    config = json.loads((scaled / "config.json").read_text())
    config["rope_scaling"] = {"rope_type": "linear", "factor": 4.0}
    (scaled / "config.json").write_text(json.dumps(config))
    rng = random.Random(5)
    task = jsonl_write(root / "cmp_mc.jsonl", [mc_doc(rng, i + 1) for i in range(6)])
    text = root / "cmp.txt"
    text.write_text(" ".join(rng.choice(WORDS) for _ in range(400)))
    out = root / "compare"
    cli("compare", folder, scaled, "--names", "native", "pi4", "--text", text, "--ctx", 64, 128, "--tasks", task,
        "--passkey-lengths", 200, 300, "--passkey-depths", 0.5, "--ruler-lengths", *LENGTHS, "--ruler-tasks",
        "niah_single_1", "vt", "--ruler-samples", 2, "--quiet", "-o", out, *data_args(root), *device_args())
    report = json.loads(out.with_suffix(".json").read_text())
    assert [m["name"] for m in report["models"]] == ["native", "pi4"] and report["reference"] == "native"
    native, pi4 = report["models"]
    assert native["tasks"]["linear_ard"]["recovery"] == pytest.approx(100.0)
    assert pi4["tasks"]["linear_ard"]["recovery"] == pytest.approx(
        100 * pi4["tasks"]["linear_ard"]["avg"] / native["tasks"]["linear_ard"]["avg"])
    assert set(pi4["tasks"]["results"]["cmp_mc"]) >= {"acc,none", "acc_norm,none"}
    assert [r["ctx_len"] for r in pi4["ppl"]] == [64, 128]
    assert native["ppl"][0]["ppl"] != pi4["ppl"][0]["ppl"], "the scaled model should score differently"
    # The native model's RULER cells are the ones `eval ruler` computes for the same seeds.
    single = ruler_report[0]
    for task in ("niah_single_1", "vt"):
        for length in LENGTHS:
            assert native["ruler"]["scores"][task][str(length)] == single["scores"][task][str(length)]
    md = out.with_suffix(".md").read_text()
    for section in ("## Perplexity", "## Tasks (%, Rec. against native)", "## Passkey", "## RULER"):
        assert section in md
    assert "| pi4 |" in md and "Rec." in md
    # The figure (scripts/plot.py; tests/python/test_plot.py checks what it draws) is left to it.
    assert not out.with_suffix(".svg").exists()


def test_compare_needs_matching_names(ruler_setup, tmp_path):
    _, folder, _ = ruler_setup
    r = cli("compare", folder, folder, "--names", "a", "--passkey-lengths", 200, *device_args(), ok=False)
    assert r.returncode != 0 and "--names has 1 names for 2 models" in r.stderr
    r = cli("compare", folder, "--reference", "zzz", "--passkey-lengths", 200, *device_args(), ok=False)
    assert "--reference 'zzz' is not one of --names" in r.stderr
