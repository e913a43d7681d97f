"""`linear-ard eval tasks MODEL --tasks NAMES --include_path DIR`: lm-eval task names resolved by
lm-eval's own registry and scored by this project's engine (the `linear-ard` lm-eval model answering
through `linear-ard eval requests`), against lm-eval's own HF backend on the same local task YAMLs
(a multiple-choice task, a generate_until task and a loglikelihood_rolling task, data in local JSON
files, offline) on models/demo: the same requests, loglikelihoods within 1e-4 (fp32 CPU), the same
generations and metrics, results/samples files where lm-eval writes them. An unknown task name and a
task whose dataset is not cached are one error line.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_eval_lm_eval_names.py
"""

import json
import os
import subprocess
import sys

import pytest

from real_model import ROOT
from test_eval import binary
from test_eval_lm_eval import results_of, samples_of

pytest.importorskip("lm_eval", reason="lm-eval is not installed (requirements.txt lists it)")
DEMO = ROOT / "models" / "demo"
YAML = {
    "demo_mc": """task: demo_mc
dataset_path: json
dataset_kwargs: {{data_files: {{test: {path}}}}}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{context}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{gold}}}}"
metric_list: [{{metric: acc}}, {{metric: acc_norm}}]
""",
    "demo_gen": """task: demo_gen
dataset_path: json
dataset_kwargs: {{data_files: {{test: {path}}}}}
test_split: test
output_type: generate_until
doc_to_text: "{{{{context}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs: {{until: ["\\n", "."], max_gen_toks: 12, do_sample: false}}
metric_list: [{{metric: exact_match}}]
""",
    "demo_roll": """task: demo_roll
dataset_path: json
dataset_kwargs: {{data_files: {{test: {path}}}}}
test_split: test
output_type: loglikelihood_rolling
doc_to_text: ""
doc_to_target: "{{{{text}}}}"
metric_list: [{{metric: word_perplexity}}, {{metric: byte_perplexity}}, {{metric: bits_per_byte}}]
""",
}


def docs():
    verses = [json.loads(line)["text"] for line in (ROOT / "data" / "demo" / "heldout.jsonl").read_text().splitlines()]
    words = " ".join(verses).split()
    mc = [{"context": " ".join(words[i:i + 12]), "choices": [" ".join(words[i + 12 + k:i + 14 + k]) for k in range(3)],
           "gold": i % 3} for i in range(0, 120, 30)]
    gen = [{"context": " ".join(words[i:i + 16]), "answer": words[i + 16]} for i in range(0, 120, 40)]
    roll = [{"text": " ".join(words[i:i + 150])} for i in (0, 400)]  # > max_length 128 tokens: several windows
    return {"demo_mc": mc, "demo_gen": gen, "demo_roll": roll}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    tasks = root / "tasks"
    tasks.mkdir()
    for name, rows in docs().items():
        data = root / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        (tasks / f"{name}.yaml").write_text(YAML[name].format(path=data))
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    names = "demo_mc,demo_gen,demo_roll"
    theirs, ours = root / "theirs", root / "ours"
    r = subprocess.run([sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args",
                        f"pretrained={DEMO},dtype=float32,max_length=128", "--tasks", names, "--include_path",
                        str(tasks), "--device", "cpu", "--batch_size", "1", "--output_path", str(theirs),
                        "--log_samples"], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    r = subprocess.run([str(binary()), "eval", "tasks", str(DEMO), "--tasks", names, "--include_path", str(tasks),
                        "--device", "cpu", "--dtype", "fp32", "--max_length", "128", "--output_path", str(ours),
                        "--log_samples"], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "demo_mc" in r.stdout  # lm-eval's table is the command's report
    return theirs, ours, tasks, env


def test_samples_equal_lm_eval_hf(runs):
    theirs, ours = samples_of(runs[0]), samples_of(runs[1])
    assert sorted(ours) == sorted(theirs) == ["demo_gen", "demo_mc", "demo_roll"]
    for task in theirs:
        for a, b in zip(ours[task], theirs[task], strict=True):
            assert a["arguments"] == b["arguments"], task
            for x, y in zip(a["filtered_resps"], b["filtered_resps"], strict=True):
                if isinstance(y, str):
                    assert x == y, (task, a["doc_id"])
                elif isinstance(y, list):
                    assert float(x[0]) == pytest.approx(float(y[0]), abs=1e-4) and x[1] == y[1], (task, a["doc_id"])
                else:
                    assert float(x) == pytest.approx(float(y), abs=1e-4), (task, a["doc_id"])


def test_results_equal_lm_eval_hf(runs):
    theirs, ours = results_of(runs[0]), results_of(runs[1])
    for task, metrics in theirs["results"].items():
        for key, value in metrics.items():
            if key.endswith(",none") and "stderr" not in key:
                assert ours["results"][task][key] == pytest.approx(value, rel=1e-4), (task, key)
    assert ours["config"]["model"] == "linear-ard"


@pytest.mark.parametrize("task,message", [("no_such_task_xyz", "no_such_task_xyz"), ("demo_missing", "demo_missing")])
def test_unknown_or_uncached_is_one_line(runs, tmp_path, task, message):
    tasks = runs[2]
    (tasks / "demo_missing.yaml").write_text("task: demo_missing\ndataset_path: no-such-org/no-such-dataset\n"
                                             "test_split: test\noutput_type: loglikelihood\ndoc_to_text: x\n"
                                             "doc_to_target: y\n")
    r = subprocess.run([str(binary()), "eval", "tasks", str(DEMO), "--tasks", task, "--include_path", str(tasks),
                        "--device", "cpu"], capture_output=True, text=True, env=runs[3], timeout=600)
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
