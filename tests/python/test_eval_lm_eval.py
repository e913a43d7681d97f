"""`linear-ard eval tasks` against lm-evaluation-harness itself (PyPI lm-eval, HF backend, CPU, fp32)
on the real default model (SmolLM2-135M-Instruct, imported by scripts/import_gguf.py) and the same
data: a multiple-choice task and a last-word task written once as JSONL in this project's schema,
which a 12-line lm-eval task YAML reads as is (a last-word target gets the space lm-eval's
loglikelihood tasks keep in doc_to_target, as LAMBADA's does). lm-eval runs with --log_samples; then ours runs on
the JSONL files and on lm-eval's samples logs. Every request's (context, continuation) is lm-eval's,
every loglikelihood within 1e-4 of its and every greedy flag equal, every per-doc and aggregated
metric equal (acc, acc_norm, their stderr, perplexity), and the results JSON has lm-eval's keys.
It also checks the BOS rule: SmolLM2's tokenizer adds no BOS, and lm-eval conditions an empty
context on the tokenizer's BOS token (<|im_start|>); so do we.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_eval_lm_eval.py    # ~2-3 min on 2 cores
"""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from test_eval import binary

ROOT = Path(__file__).resolve().parents[2]
# lm-eval's task configs for the two files: the JSONL fields are lm-eval's doc_to_* as they are.
TASK_YAML = {
    "eco_mc": """task: eco_mc
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{context}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{gold}}}}"
metric_list:
  - metric: acc
  - metric: acc_norm
""",
    "eco_lw": """task: eco_lw
dataset_path: json
dataset_kwargs:
  data_files:
    test: {path}
test_split: test
output_type: loglikelihood
doc_to_text: "{{{{context}}}}"
doc_to_target: "{{{{' ' + continuation}}}}"
metric_list:
  - metric: perplexity
  - metric: acc
""",
}


@pytest.fixture(scope="module")
def smol():
    """The default real model's HF folder, from the project's importer (cached after the first use)."""
    script = ROOT / "scripts" / "import_gguf.py"
    if not script.exists():
        pytest.skip("scripts/import_gguf.py is not in this branch yet: it makes the SmolLM2 folder this test needs")
    r = subprocess.run([sys.executable, str(script), "--default-model"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    folder = Path([line for line in r.stdout.splitlines() if line.strip()][-1].strip())
    assert (folder / "config.json").exists(), r.stdout
    return folder


def task_docs():
    rng = random.Random(0)
    facts = [("The sky on a clear day is", "blue"), ("Fresh grass is", "green"), ("Snow is", "white"),
             ("Coal is", "black"), ("A ripe banana is", "yellow"), ("Blood is", "red"),
             ("An orange is", "orange"), ("A plum is", "purple")]
    colours = sorted({c for _, c in facts})
    mc = []
    for text, answer in facts:
        choices = rng.sample([c for c in colours if c != answer], 3) + [answer]
        rng.shuffle(choices)
        mc.append({"context": f"Question: {text} which colour?\nAnswer:", "choices": choices,
                   "gold": choices.index(answer)})
    mc[0]["choices"][0] = "bleu clair é"  # acc_norm divides by characters, not bytes
    lw = [{"context": "The capital of France is", "continuation": "Paris"},
          {"context": "One, two, three, four,", "continuation": "five"},
          {"context": "The cat sat on the", "continuation": "mat"},
          {"context": "", "continuation": "Hello"},  # empty context: conditioned on the prefix token
          {"context": "Water freezes at zero degrees ", "continuation": "Celsius"}]  # trailing space moves
    return {"eco_mc": mc, "eco_lw": lw}


def samples_of(folder):
    """{task: [sample, ...]} from the samples logs under `folder` (lm-eval's layout)."""
    out = {}
    for f in sorted(folder.glob("*/samples_*.jsonl")):
        task = f.name[len("samples_"):].rsplit("_", 1)[0]
        out[task] = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines()]
    return out


def results_of(folder):
    (path,) = folder.glob("*/results_*.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def runs(smol, tmp_path_factory):
    pytest.importorskip("lm_eval", reason="lm-eval is not installed (requirements.txt lists it)")
    root = tmp_path_factory.mktemp("lm_eval")
    files = []
    for task, docs in task_docs().items():
        path = root / f"{task}.jsonl"
        path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
        (root / f"{task}.yaml").write_text(TASK_YAML[task].format(path=path))
        files.append(path)
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    theirs = root / "theirs"
    r = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
                        f"pretrained={smol},dtype=float32", "--tasks", "eco_mc,eco_lw", "--include_path", str(root),
                        "--device", "cpu", "--batch_size", "4", "--output_path", str(theirs), "--log_samples"],
                       capture_output=True, text=True, env=env, timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    ours, replay = root / "ours", root / "replay"
    common = ["--device", "cpu", "--dtype", "fp32", "--batch_size", "4", "--log_samples", "--quiet"]
    for out, tasks in ((ours, files), (replay, sorted(theirs.glob("*/samples_*.jsonl")))):
        r = subprocess.run([str(binary()), "eval", "tasks", str(smol), "--tasks", ",".join(map(str, tasks)),
                            "--output_path", str(out), *common], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
    return theirs, ours, replay


@pytest.mark.parametrize("which", ["ours", "replay"])
def test_requests_and_loglikelihoods_equal_lm_eval(runs, which):
    theirs, ours = samples_of(runs[0]), samples_of(runs[1 if which == "ours" else 2])
    assert sorted(ours) == sorted(theirs) == ["eco_lw", "eco_mc"]
    for task in theirs:
        assert len(ours[task]) == len(theirs[task])
        for a, b in zip(ours[task], theirs[task]):
            assert a["doc_id"] == b["doc_id"] and a["arguments"] == b["arguments"], (task, a["doc_id"])
            for (ll_a, greedy_a), (ll_b, greedy_b) in zip(a["filtered_resps"], b["filtered_resps"]):
                assert float(ll_a) == pytest.approx(float(ll_b), abs=1e-4), (task, a["doc_id"])
                assert greedy_a == greedy_b, (task, a["doc_id"])
            for metric in b["metrics"]:
                assert a[metric] == pytest.approx(b[metric], abs=1e-4), (task, a["doc_id"], metric)
            assert a["target"] == b["target"]


@pytest.mark.parametrize("which", ["ours", "replay"])
def test_results_json_equals_lm_eval(runs, which):
    theirs, ours = results_of(runs[0]), results_of(runs[1 if which == "ours" else 2])
    for key in ("results", "configs", "versions", "n-shot", "higher_is_better", "n-samples", "config"):
        assert key in ours, key
    for task, metrics in theirs["results"].items():
        for key, value in metrics.items():
            if key.endswith(",none") and not key.startswith("perplexity_stderr"):
                assert ours["results"][task][key] == pytest.approx(value, rel=1e-4), (task, key)
    assert ours["n-samples"] == theirs["n-samples"]
    assert ours["higher_is_better"] == theirs["higher_is_better"]
    for task in theirs["configs"]:
        assert ours["configs"][task]["output_type"] == theirs["configs"][task]["output_type"]
    if which == "ours":
        assert ours["n-shot"] == theirs["n-shot"]
    assert ours["tokenizer_bos_token"] == theirs["tokenizer_bos_token"]
    assert ours["tokenizer_eos_token"] == theirs["tokenizer_eos_token"]
