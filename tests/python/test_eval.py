"""Tests of `linear-ard eval` (ppl, tasks, passkey) on CPU against transformers and Python
re-implementations of lm-evaluation-harness's rules, with a tiny random LLaMA and its byte-level BPE
tokenizer from tests/python/tiny_teacher.py.

    LINEAR_ARD_BUILD_DIR=$PWD/build-eval pytest -q tests/python/test_eval.py

The same comparison on a GPU (bf16 with a looser tolerance; not run in CI):
    LINEAR_ARD_BUILD_DIR=$PWD/build-cuda LINEAR_ARD_EVAL_DEVICE=cuda LINEAR_ARD_EVAL_DTYPE=bfloat16 \
        pytest -q tests/python/test_eval.py
"""

import json
import math
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_teacher  # noqa: E402

DEVICE = os.environ.get("LINEAR_ARD_EVAL_DEVICE", "cpu")
DTYPE = os.environ.get("LINEAR_ARD_EVAL_DTYPE", "float32")
CLI_DTYPE = {"float32": "fp32", "bfloat16": "bf16"}[DTYPE]
ATOL = 1e-4 if DTYPE == "float32" else 5e-2  # summed logprobs of a few tokens
WORDS = ("the model restores relation attention query key value rope scaled student teacher short "
         "context long green blue yellow sky sun grass pass").split()


def binary():
    build = os.environ.get("LINEAR_ARD_BUILD_DIR")
    if not build:
        pytest.skip("LINEAR_ARD_BUILD_DIR is not set (scripts/test.sh sets it to the build folder)")
    path = Path(build) / "src" / "cli" / "linear-ard"
    assert path.is_file(), f"{path} is missing: build the linear_ard_cli target"
    return path


def cli(*args, ok=True):
    r = subprocess.run([str(binary()), "eval", *map(str, args)], capture_output=True, text=True, timeout=300)
    if ok:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def device_args():
    return ["--device", DEVICE, "--dtype", CLI_DTYPE]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    rng = random.Random(0)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) + "." for _ in range(200)]
    folder = tiny_teacher.teacher_make(root / "model", texts, hidden=64, intermediate=128, layers=2,
                                            heads=4, kv_heads=2, max_positions=256, vocab_size=300,
                                            qk_std=0.15, seed=0)
    model = transformers.LlamaForCausalLM.from_pretrained(str(folder), dtype=getattr(torch, DTYPE))
    model = model.to(DEVICE).eval()
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    return root, folder, model, tok


def logprobs_of(model, ids):
    """log p(ids[t+1] | ids[:t+1]) and the argmax ids, for one sequence."""
    with torch.no_grad():
        logits = model(torch.tensor([ids], device=DEVICE)).logits[0].float().log_softmax(-1).cpu()
    return logits[:-1].gather(-1, torch.tensor(ids[1:])[:, None])[:, 0], logits[:-1].argmax(-1)


def harness_request(tok, context, continuation, max_length):
    """lm-evaluation-harness's _encode_pair and truncation, then the loglikelihood and is_greedy."""
    n = len(context) - len(context.rstrip())
    if n:
        continuation, context = context[-n:] + continuation, context[:-n]
    if not context:
        ctx, cont = [tok.token_to_id("<s>")], tok.encode(continuation, add_special_tokens=False).ids
    else:
        whole, ctx = tok.encode(context + continuation).ids, tok.encode(context).ids
        cont = whole[len(ctx):]
    full = (ctx + cont)[-(max_length + 1):]
    return full, len(cont)


def harness_loglikelihood(model, tok, context, continuation, max_length):
    full, k = harness_request(tok, context, continuation, max_length)
    lp, arg = logprobs_of(model, full)
    target = torch.tensor(full[-k:])
    return lp[-k:].sum().item(), bool((arg[-k:] == target).all())


def mc_doc(rng, i):
    choices = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(2, 4))]
    if i == 0:
        choices[0] = "blé vert"  # multi-byte characters: acc_norm counts code points
    return {"context": "Question: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) +
            "\nAnswer:", "choices": choices, "gold": rng.randrange(len(choices))}


def lw_doc(rng):
    return {"context": " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 15))),
            "continuation": rng.choice(WORDS)}


def jsonl_write(path, docs):
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tasks(setup):
    root = setup[0]
    rng = random.Random(1)
    mc = jsonl_write(root / "mc.jsonl", [mc_doc(rng, i) for i in range(8)])
    lw = jsonl_write(root / "lw.jsonl", [lw_doc(rng) for _ in range(6)])
    shots = jsonl_write(root / "shots.jsonl", [mc_doc(rng, i + 1) for i in range(3)])
    return mc, lw, shots


def harness_mc_metrics(docs, lls):
    acc, acc_norm, r = [], [], 0
    for d in docs:
        ll = lls[r:r + len(d["choices"])]
        r += len(d["choices"])
        norm = [x / len(c) for x, c in zip(ll, d["choices"])]
        acc.append(float(max(range(len(ll)), key=lambda i: (ll[i], -i)) == d["gold"]))
        acc_norm.append(float(max(range(len(ll)), key=lambda i: (norm[i], -i)) == d["gold"]))
    return sum(acc) / len(acc), sum(acc_norm) / len(acc_norm)


def lm_eval_outputs(path):
    """What --output_path PATH --log_samples wrote, as lm-eval lays it out: the results JSON and,
    per task, the requests of its samples log in order as (context, continuation, loglikelihood,
    greedy, doc_id)."""
    (results,) = path.glob("*/results_*.json")
    requests = {}
    for f in sorted(results.parent.glob("samples_*.jsonl")):
        task = f.name[len("samples_"):].rsplit("_", 1)[0]
        rows = []
        for line in f.read_text(encoding="utf-8").splitlines():
            sample = json.loads(line)
            args = sample["arguments"]
            for i in range(len(args)):
                ll, greedy = sample["filtered_resps"][i]
                rows.append((args[f"gen_args_{i}"]["arg_0"], args[f"gen_args_{i}"]["arg_1"], float(ll),
                             greedy == "True", sample["doc_id"]))
        requests[task] = rows
    return json.loads(results.read_text()), requests


def test_tasks_zero_shot_match_harness(setup, tasks):
    root, folder, model, tok = setup
    mc, lw, _ = tasks
    out, logs = root / "tasks0", root / "logs0"
    cli("tasks", folder, "--tasks", f"{mc},{lw}", "--batch_size", 3, "--output_path", logs, "--log_samples",
        "-o", out, *device_args())
    results, logged = lm_eval_outputs(logs)
    assert json.loads(out.with_suffix(".json").read_text()) == results
    requests = logged["mc"] + logged["lw"]
    mc_docs = [json.loads(line) for line in mc.read_text().splitlines()]
    lw_docs = [json.loads(line) for line in lw.read_text().splitlines()]
    assert len(requests) == sum(len(d["choices"]) for d in mc_docs) + len(lw_docs)

    expected = [(d["context"], " " + c) for d in mc_docs for c in d["choices"]]
    expected += [(d["context"], " " + d["continuation"]) for d in lw_docs]
    assert [(r[0], r[1]) for r in requests] == expected
    ref = [harness_loglikelihood(model, tok, c, k, 256) for c, k in expected]
    for r, (ll, greedy) in zip(requests, ref):
        assert r[2] == pytest.approx(ll, abs=ATOL), r
        assert r[3] == greedy, r

    n_mc = sum(len(d["choices"]) for d in mc_docs)
    acc, acc_norm = harness_mc_metrics(mc_docs, [ll for ll, _ in ref[:n_mc]])
    metrics = results["results"]
    assert metrics["mc"]["acc,none"] == pytest.approx(acc)
    assert metrics["mc"]["acc_norm,none"] == pytest.approx(acc_norm)
    assert {"acc_stderr,none", "acc_norm_stderr,none"} <= set(metrics["mc"])
    lw_ref = ref[n_mc:]
    assert metrics["lw"]["acc,none"] == pytest.approx(sum(g for _, g in lw_ref) / len(lw_ref))
    assert metrics["lw"]["perplexity,none"] == pytest.approx(
        math.exp(-sum(ll for ll, _ in lw_ref) / len(lw_ref)), rel=1e-4)
    assert results["n-shot"] == {"mc": 0, "lw": 0}
    assert results["n-samples"] == {"mc": {"original": 8, "effective": 8}, "lw": {"original": 6, "effective": 6}}
    assert results["configs"]["mc"]["output_type"] == "multiple_choice"
    assert results["configs"]["lw"]["output_type"] == "loglikelihood"
    assert results["config"]["model_args"]["pretrained"] == str(folder)
    assert results["config"]["batch_size"] == 3
    assert results["linear_ard"]["avg"] == pytest.approx((acc + metrics["lw"]["acc,none"]) / 2)
    assert "| Avg. |" in out.with_suffix(".md").read_text()


def test_tasks_fewshot_truncation_and_recovery(setup, tasks):
    root, folder, model, tok = setup
    mc, _, shots = tasks
    ref_out = root / "tasks0"  # written by the zero-shot test: the "native" reference
    if not ref_out.with_suffix(".json").exists():
        cli("tasks", folder, "--tasks", mc, "-o", ref_out, *device_args())
    out, logs = root / "tasks2", root / "logs2"
    cli("tasks", folder, "--tasks", mc, "--num_fewshot", 2, "--fewshot-file", shots, "--max_length", 48,
        "--output_path", logs, "--log_samples", "--reference", ref_out.with_suffix(".json"), "-o", out,
        *device_args())
    shot_docs = [json.loads(line) for line in shots.read_text().splitlines()][:2]
    prefix = "".join(d["context"] + " " + d["choices"][d["gold"]] + "\n\n" for d in shot_docs)
    mc_docs = [json.loads(line) for line in mc.read_text().splitlines()]
    _, logged = lm_eval_outputs(logs)
    requests = logged["mc"]
    expected = [(prefix + d["context"], " " + c) for d in mc_docs for c in d["choices"]]
    assert [(r[0], r[1]) for r in requests] == expected
    assert any(len(harness_request(tok, c, k, 10**9)[0]) > 49 for c, k in expected), "no truncation tested"
    for r, (c, k) in zip(requests, expected):
        ll, greedy = harness_loglikelihood(model, tok, c, k, 48)
        assert r[2] == pytest.approx(ll, abs=ATOL)
    report = json.loads(out.with_suffix(".json").read_text())
    reference = json.loads(ref_out.with_suffix(".json").read_text())
    assert report["n-shot"] == {"mc": 2}
    assert report["linear_ard"]["recovery"] == pytest.approx(
        100 * report["linear_ard"]["avg"] / reference["linear_ard"]["avg"])
    assert "Rec." in out.with_suffix(".md").read_text()


def test_fewshot_from_task_itself_is_seeded(setup, tasks):
    root, folder, _, _ = setup
    mc = tasks[0]
    contexts = []
    for k, seed in enumerate((5, 5, 6)):
        logs = root / f"logs_seed{seed}_{k}"
        cli("tasks", folder, "--tasks", mc, "--num_fewshot", 3, "--seed", seed, "--limit", 3,
            "--output_path", logs, "--log_samples", *device_args())
        results, logged = lm_eval_outputs(logs)
        assert results["n-samples"]["mc"] == {"original": 8, "effective": 3}
        contexts.append([(r[0], r[4]) for r in logged["mc"]])
    assert contexts[0] == contexts[1] and contexts[0] != contexts[2]
    docs = [json.loads(line) for line in mc.read_text().splitlines()]
    for ctx, _ in contexts[0]:
        assert ctx.count("\n\n") == 3
    # A doc never serves as its own example.
    first = [c for c, doc_id in contexts[0] if doc_id == 0][0]
    assert docs[0]["context"] + " " + docs[0]["choices"][docs[0]["gold"]] not in first


def test_lm_eval_samples_log_reads_back(setup, tasks):
    """A samples log (ours here; lm-eval's in test_eval_lm_eval.py) is a task file: the same
    requests, scores and metrics, and few-shot options are refused (its prompts hold theirs)."""
    root, folder, _, _ = setup
    mc, lw, shots = tasks
    first = root / "logs_first"
    cli("tasks", folder, "--tasks", mc, lw, "--num_fewshot", 1, "--fewshot-file", shots, "--output_path", first,
        "--log_samples", *device_args())
    results, logged = lm_eval_outputs(first)
    again = root / "logs_again"
    logs = sorted(first.glob("*/samples_*.jsonl"))
    cli("tasks", folder, "--tasks", *logs, "--output_path", again, "--log_samples", *device_args())
    results2, logged2 = lm_eval_outputs(again)
    assert sorted(logged2) == ["lw", "mc"]
    for task in ("mc", "lw"):
        assert [r[:2] + (r[4],) for r in logged2[task]] == [r[:2] + (r[4],) for r in logged[task]]
        for a, b in zip(logged2[task], logged[task]):
            assert a[2] == pytest.approx(b[2], abs=1e-5) and a[3] == b[3]
        for key, value in results["results"][task].items():
            assert results2["results"][task][key] == pytest.approx(value), (task, key)
    assert results2["n-shot"] == {"mc": None, "lw": None}
    r = cli("tasks", folder, "--tasks", logs[0], "--num_fewshot", 1, *device_args(), ok=False)
    assert r.returncode == 1 and "already hold their few-shot examples" in r.stderr, r.stderr


def test_tasks_usage_errors_exit_2(setup, tasks):
    _, folder, _, _ = setup
    r = cli("tasks", folder, "--tasks", tasks[0], "--log_samples", *device_args(), ok=False)
    assert r.returncode == 2 and "--log_samples needs --output_path" in r.stderr, r.stderr
    r = cli("tasks", folder, "--tasks", tasks[0], "--avg-metric", "f1", *device_args(), ok=False)
    assert r.returncode == 2, r.stderr
    r = cli("tasks", folder, *device_args(), ok=False)
    assert r.returncode == 2 and "--tasks is required" in r.stderr, r.stderr
    r = cli("tasks", "--help")
    assert "text between a context and each answer" in r.stdout and '" "' in r.stdout and '"\\n\\n"' in r.stdout


BAD_LINES = {
    "missing_context": ({"choices": ["a", "b"], "gold": 0}, "missing string field \"context\""),
    "gold_out_of_range": ({"context": "q", "choices": ["a", "b"], "gold": 2}, "out of range"),
    "gold_negative": ({"context": "q", "choices": ["a", "b"], "gold": -1}, "out of range"),
    "gold_not_int": ({"context": "q", "choices": ["a", "b"], "gold": "1"}, "must be an integer"),
    "missing_gold": ({"context": "q", "choices": ["a", "b"]}, "missing integer field \"gold\""),
    "empty_choices": ({"context": "q", "choices": [], "gold": 0}, "non-empty list"),
    "empty_choice": ({"context": "q", "choices": ["a", ""], "gold": 0}, "non-empty string"),
    "mixed_types": ({"context": "q", "continuation": "a"}, "a last_word line in a multiple_choice file"),
    "both_kinds": ({"context": "q", "continuation": "a", "choices": ["a"], "gold": 0}, "exactly one"),
    "not_json": ("{\"context\": ", "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_bad_task_file_names_file_and_line(setup, case):
    root, folder, _, _ = setup
    line, message = BAD_LINES[case]
    path = root / f"bad_{case}.jsonl"
    good = json.dumps({"context": "q", "choices": ["a", "b"], "gold": 1})
    path.write_text(good + "\n\n" + (line if isinstance(line, str) else json.dumps(line)) + "\n" + good + "\n")
    r = cli("tasks", folder, "--tasks", path, *device_args(), ok=False)
    assert r.returncode != 0
    assert f"{path}:3:" in r.stderr and message in r.stderr, r.stderr


def ppl_reference(model, tok, docs, ctx, stride):
    nll, count, nbytes = 0.0, 0, 0
    for d in docs:
        ids = tok.encode(d).ids
        nbytes += len(d.encode("utf-8"))
        prev_end = 0
        for begin in range(0, len(ids), stride):
            end = min(begin + ctx, len(ids))
            first = max(prev_end, begin + 1)
            if end > first:
                lp, _ = logprobs_of(model, ids[begin:end])
                nll -= lp[first - begin - 1:].sum().item()
                count += end - first
            prev_end = end
            if end == len(ids):
                break
    return nll, count, nbytes


def test_ppl_matches_python_windows(setup):
    root, folder, model, tok = setup
    rng = random.Random(2)
    docs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 90))) for _ in range(4)]
    text = jsonl_write(root / "ppl.jsonl", [{"text": d} for d in docs])
    out = root / "ppl"
    cli("ppl", folder, "--text", text, "--ctx", 32, 64, "--batch-size", 3, "-o", out, *device_args())
    cli("ppl", folder, "--text", text, "--ctx", 48, "--stride", 16, "-o", root / "ppl_strided", *device_args())
    rows = json.loads(out.with_suffix(".json").read_text())["results"]
    rows += json.loads((root / "ppl_strided.json").read_text())["results"]
    for row in rows:
        nll, count, nbytes = ppl_reference(model, tok, docs, row["ctx_len"], row["stride"])
        assert row["tokens"] == count and row["bytes"] == nbytes
        assert row["nll"] == pytest.approx(nll, rel=1e-5 if DTYPE == "float32" else 1e-2)
        assert row["ppl"] == pytest.approx(math.exp(nll / count), rel=1e-4 if DTYPE == "float32" else 1e-2)
        assert row["bits_per_byte"] == pytest.approx(nll / math.log(2) / nbytes, rel=1e-4 if DTYPE == "float32" else 1e-2)
        assert row["tokens_per_s"] > 0
    # Disjoint windows score every token but each window's first; the first test text has several.
    assert rows[0]["windows"] > len(docs)


def kl_reference(model, ref, tok, docs, ctx):
    """Summed KL(p_ref || p_model) of next-token distributions and the count over the disjoint windows
    `ppl_reference` scores, with transformers."""
    total, count = 0.0, 0
    for d in docs:
        ids = tok.encode(d).ids
        prev_end = 0
        for begin in range(0, len(ids), ctx):
            end = min(begin + ctx, len(ids))
            first = max(prev_end, begin + 1)
            if end > first:
                x = torch.tensor([ids[begin:end]], device=DEVICE)
                with torch.no_grad():
                    lp = model(x).logits[0, :-1].double().log_softmax(-1)
                    lr = ref(x).logits[0, :-1].double().log_softmax(-1)
                kl = (lr.exp() * (lr - lp)).sum(-1)
                total += kl[first - begin - 1:].sum().item()
                count += end - first
            prev_end = end
            if end == len(ids):
                break
    return total, count


def test_compare_kl_to_the_native_model(setup, tmp_path):
    root, folder, model, tok = setup
    scaled = tmp_path / "scaled"
    shutil.copytree(folder, scaled)
    config = json.loads((scaled / "config.json").read_text())
    config["rope_scaling"] = {"rope_type": "linear", "factor": random.choice([2.0, 3.0, 4.0])}
    (scaled / "config.json").write_text(json.dumps(config))
    student = transformers.LlamaForCausalLM.from_pretrained(str(scaled), dtype=getattr(torch, DTYPE)).to(DEVICE).eval()
    rng = random.Random()
    docs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 90))) for _ in range(3)]
    text = jsonl_write(tmp_path / "kl.jsonl", [{"text": d} for d in docs])
    out = tmp_path / "cmp"
    cli("compare", folder, scaled, "--names", "native", "pi", "--text", text, "--ctx", 32, 64, "--kl-to", "native",
        "--batch-size", 2, "--quiet", "-o", out, *device_args())
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["kl_to"] == "native"
    native, pi = report["models"]
    for row_native, row_pi in zip(native["ppl"], pi["ppl"]):
        assert row_native["kl"] == pytest.approx(0.0, abs=1e-6)  # the reference against itself
        total, count = kl_reference(student, model, tok, docs, row_pi["ctx_len"])
        assert row_pi["tokens"] == count
        assert row_pi["kl"] == pytest.approx(total / count, rel=1e-4 if DTYPE == "float32" else 5e-2)
        assert row_pi["kl"] > 0
    md = out.with_suffix(".md").read_text()
    assert "## KL to native (nats per token, next-token distributions)" in md and "| KL@32 | KL@64 |" in md
    # Without --kl-to nothing is computed; a name not among --names and a missing --text are usage errors.
    cli("compare", folder, scaled, "--text", text, "--ctx", 32, "--quiet", "-o", tmp_path / "plain", *device_args())
    assert "kl" not in json.loads((tmp_path / "plain.json").read_text())["models"][1]["ppl"][0]
    r = cli("compare", folder, scaled, "--names", "a", "b", "--text", text, "--ctx", 32, "--kl-to", "c",
            *device_args(), ok=False)
    assert r.returncode == 2 and "--kl-to 'c' is not one of --names" in r.stderr
    r = cli("compare", folder, scaled, "--names", "a", "b", "--passkey-lengths", 200, "--kl-to", "a",
            *device_args(), ok=False)
    assert r.returncode == 2 and "--kl-to needs the perplexity's --text and --ctx" in r.stderr
    # Another tokenizer: no KL over two vocabularies.
    other = tiny_teacher.teacher_make(tmp_path / "other", [d[::-1] for d in docs] * 20, hidden=32, intermediate=64,
                                      layers=1, heads=2, kv_heads=1, max_positions=256, vocab_size=280, seed=1)
    r = cli("compare", folder, other, "--names", "a", "b", "--text", text, "--ctx", 32, "--kl-to", "a",
            *device_args(), ok=False)
    assert r.returncode != 0 and "the KL needs one vocabulary" in r.stderr, r.stderr


def test_passkey_prompts_and_greedy_parity(setup):
    root, folder, model, tok = setup
    outs = []
    for name in ("pk1", "pk2"):
        cli("passkey", folder, "--lengths", 230, 256, "--depths", 0, 0.5, 1, "--seed", 3, "-o", root / name,
            *device_args())
        outs.append(json.loads((root / f"{name}.json").read_text()))
    assert outs[0]["rows"] == outs[1]["rows"], "passkey prompts or outputs are not deterministic"
    keys = set()
    for row in outs[0]["rows"]:
        for p, generated in zip(row["prompts"], row["outputs"]):
            key = p["passkey"]
            keys.add(key)
            assert f"The pass key is {key}. Remember it. {key} is the pass key." in p["text"]
            # The prompt fed: the text, then the answer lead (the bare space before digits, if the
            # tokenizer writes one; this byte-level BPE may merge it into the digits instead).
            ids = tok.encode(p["text"]).ids + p["answer_lead_ids"]
            assert tok.decode(p["answer_lead_ids"]).strip() == ""
            assert len(ids) == p["tokens"] <= row["length"] and p["tokens"] > row["length"] - 60
            before = p["text"].split("The pass key is " + key)[0]
            if row["depth"] == 0:
                assert "The grass is green" not in before
            # Scoring: the random model does not know the key; its score is whether the first number is it.
            first = "".join(c if c.isdigit() else " " for c in generated).split()
            assert row["accuracy"] in (0.0, 1.0) or row["samples"] > 1
            assert row["accuracy"] == float(bool(first) and first[0] == key)
    assert len(keys) > 1


def test_passkey_no_answer_lead_is_the_reference_prompt(setup):
    """By default a prompt ends with the answer's key-independent tokens (the answer lead); with
    --no-answer-lead it ends at "The pass key is", as the reference prompt does; same key, same text."""
    root, folder, model, tok = setup
    for name, extra in (("lead", []), ("ref", ["--no-answer-lead"])):
        cli("passkey", folder, "--lengths", 230, "--depths", 0.5, "--seed", 5, "-o", root / f"pk_{name}", *extra,
            *device_args())
    lead, ref = (json.loads((root / f"pk_{n}.json").read_text()) for n in ("lead", "ref"))
    assert lead["answer_lead"] is True and ref["answer_lead"] is False
    p, q = lead["rows"][0]["prompts"][0], ref["rows"][0]["prompts"][0]
    assert p["passkey"] == q["passkey"] and q["answer_lead_ids"] == []
    assert q["tokens"] == len(tok.encode(q["text"]).ids) <= 230
    ids = tok.encode(p["text"]).ids + p["answer_lead_ids"]
    full = tok.encode(p["text"] + " " + p["passkey"]).ids
    assert full[:len(ids)] == ids and tok.decode([full[len(ids)]]).strip(), "the next id must start the key"


def test_converters_write_valid_task_files(tmp_path):
    script = Path(__file__).resolve().parents[2] / "scripts" / "convert_tasks.py"

    def convert(dataset, *inputs):
        out = tmp_path / f"{dataset}.jsonl"
        subprocess.run([sys.executable, str(script), dataset, *map(str, inputs), "-o", str(out)], check=True)
        return [json.loads(line) for line in out.read_text().splitlines()]

    arc = jsonl_write(tmp_path / "arc_in.jsonl", [{"question": {"stem": "Why?", "choices": [
        {"label": "A", "text": "x"}, {"label": "B", "text": "y"}]}, "answerKey": "B"}])
    assert convert("arc", arc) == [{"context": "Question: Why?\nAnswer:", "choices": ["x", "y"], "gold": 1}]
    siqa = jsonl_write(tmp_path / "siqa_in.jsonl", [{"context": "C.", "question": "Q?", "answerA": "a",
                                                     "answerB": "b", "answerC": "c"}])
    (tmp_path / "siqa.lst").write_text("3\n")
    assert convert("siqa", siqa, tmp_path / "siqa.lst")[0] == {"context": "Q: C. Q?\nA:", "choices": ["a", "b", "c"],
                                                               "gold": 2}
    (tmp_path / "mathqa.json").write_text(json.dumps([{"Problem": "1+1", "correct": "b",
                                                       "options": "a ) 1 , b ) 2 , c ) 3 , d ) 4 , e ) 5"}]))
    assert convert("mathqa", tmp_path / "mathqa.json")[0]["choices"] == ["1", "2", "3", "4", "5"]
    lam = jsonl_write(tmp_path / "lambada_in.jsonl", [{"text": "he said hello"}])
    assert convert("lambada", lam) == [{"context": "he said", "continuation": "hello"}]
    boolq = jsonl_write(tmp_path / "boolq_in.jsonl", [{"question": "is it", "passage": "P", "answer": True}])
    assert convert("boolq", boolq)[0] == {"context": "P\nQuestion: is it?\nAnswer:", "choices": ["no", "yes"], "gold": 1}


def test_passkey_greedy_is_transformers_argmax(setup):
    """Our KV-cache greedy decoding picks, at every step, a token that transformers' full forward on
    the same prefix ranks first. A random model's next-token distribution is nearly flat, so two
    logits can tie to within rounding and `generate` may break the tie the other way; a tie is
    accepted only within ATOL (fp32 logit rounding is ~1e-6 here), a wrong token is not."""
    root, folder, model, tok = setup
    cli("passkey", folder, "--lengths", 300, "--depths", 0.0, 0.5, 1.0, "--seed", 3,
        "-o", root / "pk_gen", *device_args())
    rows = json.loads((root / "pk_gen.json").read_text())["rows"]
    checked = 0
    for row in rows:
        for prompt, out in zip(row["prompts"], row["output_ids"]):
            ids = tok.encode(prompt["text"]).ids + prompt["answer_lead_ids"]
            assert out, "passkey produced no tokens"
            with torch.no_grad():
                logits = model(torch.tensor([ids + out], device=DEVICE)).logits[0].float().cpu()
            for t, token in enumerate(out):
                step = logits[len(ids) - 1 + t]
                assert step[token] >= step.max() - ATOL, (
                    f"step {t}: chose {token} (logit {step[token]:.6f}), "
                    f"transformers' best is {int(step.argmax())} ({step.max():.6f})")
                checked += 1
    assert checked >= 3
