"""Reliability of the commands that load a model folder (docs/reliability.md): `linear-ard inspect`, `eval ppl`,
`eval tasks` and `restore` on malformed model folders and task files generated from the CI model
models/demo, one test id per generated case and command.

Each case breaks one thing (a config.json key missing, mistyped or absurd, model.safetensors empty,
truncated or with a corrupt header, a tensor missing or of the wrong shape, NaN/Inf weights, a
tokenizer larger than the embedding, no or a broken tokenizer, a bad task-file line) and checks
what a user relies on: exit status 1, a `linear-ard: error:` naming the problem (file, key, tensor
or line) and nothing written where the command would have put its output. Legal but suspicious
input (evaluating beyond the native context of an unscaled model) gives a warning and goes on.
docs/reliability.md counts the cases.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_model_folder_reliability.py
"""

import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_restore import binary  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "models" / "demo"
WEIGHTS = "model.safetensors"
UP = "model.layers.0.mlp.up_proj.weight"
DOWN = "model.layers.3.mlp.down_proj.weight"


def run(*args):
    return subprocess.run([str(binary()), *map(str, args)], capture_output=True, text=True, timeout=300)


# ---- how each case breaks a copy of models/demo


def config_edit(**changes):
    def make(folder):
        config = json.loads((folder / "config.json").read_text())
        for key, value in changes.items():
            if value is None:
                del config[key]
            else:
                config[key] = value
        (folder / "config.json").write_text(json.dumps(config))
    return make


def config_text(text):
    def make(folder):
        (folder / "config.json").write_text(text)
    return make


def remove(*names):
    def make(folder):
        for name in names:
            (folder / name).unlink()
    return make


def weights_bytes(edit):
    def make(folder):
        path = folder / WEIGHTS
        path.write_bytes(edit(path.read_bytes()))
    return make


def header_corrupt(data):
    n = struct.unpack("<Q", data[:8])[0]
    header = data[8:8 + n].replace(b'"dtype"', b'"dtype" "', 1)
    return data[:8] + header + data[8 + n:]


def tensors_edit(edit):
    def make(folder):
        tensors = load_file(str(folder / WEIGHTS))
        edit(tensors)
        save_file(tensors, str(folder / WEIGHTS), metadata={"format": "pt"})
    return make


def tensor_set(name, index, value):
    def edit(tensors):
        tensors[name][index] = value
    return edit


def sharded_with_missing_shard(folder):
    tensors = load_file(str(folder / WEIGHTS))
    (folder / WEIGHTS).unlink()
    names = sorted(tensors)
    save_file({n: tensors[n] for n in names[:10]}, str(folder / "model-00001-of-00002.safetensors"),
              metadata={"format": "pt"})
    index = {"metadata": {}, "weight_map": {n: ("model-00001-of-00002.safetensors" if i < 10 else
                                                "model-00002-of-00002.safetensors") for i, n in enumerate(names)}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))


def tokenizer_added_tokens(count):
    def make(folder):
        t = json.loads((folder / "tokenizer.json").read_text())
        first = len(t["model"]["vocab"])
        for k in range(count):
            t["added_tokens"].append({"id": first + k, "content": f"<extra_{k}>", "single_word": False,
                                      "lstrip": False, "rstrip": False, "normalized": False, "special": True})
        (folder / "tokenizer.json").write_text(json.dumps(t))
    return make


def tokenizer_json_edit(edit):
    def make(folder):
        t = json.loads((folder / "tokenizer.json").read_text())
        edit(t)
        (folder / "tokenizer.json").write_text(json.dumps(t))
    return make


# A case: how it breaks the folder, the commands that must refuse it, and what the error names.
# inspect reads config.json and the weights' headers only (no values, no tokenizer); eval and
# restore read everything.
HEADERS = ("inspect", "ppl", "tasks", "restore")
VALUES = ("ppl", "tasks", "restore")
CASES = {
    # config.json
    "config_missing": (remove("config.json"), HEADERS, ["has no config.json"]),
    "config_not_json": (config_text("{\"hidden_size\": 256,"), HEADERS, ["config.json", "not valid JSON"]),
    "config_not_an_object": (config_text("[1, 2]"), HEADERS, ["config.json is not a JSON object"]),
    "config_empty": (config_text(""), HEADERS, ["config.json", "not valid JSON"]),
    "key_missing_hidden_size": (config_edit(hidden_size=None), HEADERS, ["missing required key hidden_size"]),
    "key_missing_num_hidden_layers": (config_edit(num_hidden_layers=None), HEADERS,
                                      ["missing required key num_hidden_layers"]),
    "key_missing_vocab_size": (config_edit(vocab_size=None), HEADERS, ["missing required key vocab_size"]),
    "key_string_hidden_size": (config_edit(hidden_size="256"), HEADERS, ["hidden_size must be an integer"]),
    "key_fractional_layers": (config_edit(num_hidden_layers=4.5), HEADERS, ["num_hidden_layers must be an integer"]),
    "key_negative_heads": (config_edit(num_attention_heads=-4), HEADERS, ["num_attention_heads must be >= 1"]),
    "key_string_rope_theta": (config_edit(rope_theta="big"), HEADERS, ["rope_theta must be a number"]),
    "key_string_tie_embeddings": (config_edit(tie_word_embeddings="yes"), HEADERS,
                                  ["tie_word_embeddings must be true or false"]),
    "key_kv_heads_not_dividing": (config_edit(num_key_value_heads=3), HEADERS, ["num_key_value_heads (3)"]),
    "key_unsupported_activation": (config_edit(hidden_act="gelu"), HEADERS, ["hidden_act \"gelu\""]),
    "key_unknown_rope_type": (config_edit(rope_scaling={"rope_type": "warp", "factor": 2}), HEADERS, ["warp"]),
    # absurd sizes: refused from the numbers before anything proportional to them is built
    "huge_num_hidden_layers": (config_edit(num_hidden_layers=10**12), HEADERS,
                               ["num_hidden_layers=1000000000000", "parameters", WEIGHTS]),
    "huge_num_hidden_layers_float": (config_edit(num_hidden_layers=1e12), HEADERS,
                                     ["num_hidden_layers=1000000000000", "parameters"]),
    "huge_hidden_size": (config_edit(hidden_size=2**40, head_dim=64), HEADERS,
                         ["hidden_size=1099511627776", "model.embed_tokens.weight", WEIGHTS]),
    "huge_vocab_size": (config_edit(vocab_size=10**15), HEADERS, ["vocab_size=1000000000000000", "parameters"]),
    "huge_intermediate_size": (config_edit(intermediate_size=10**13), HEADERS,
                               ["intermediate_size=10000000000000", "parameters"]),
    # config.json and the weights disagree
    "config_one_layer_more": (config_edit(num_hidden_layers=5), HEADERS,
                              ["missing tensor model.layers.4.", WEIGHTS, "num_hidden_layers=5"]),
    "config_smaller_intermediate": (config_edit(intermediate_size=700), HEADERS,
                                    ["model.layers.0.mlp.gate_proj.weight has shape [768, 256]", "[700, 256]"]),
    "config_smaller_vocab": (config_edit(vocab_size=1000), HEADERS,
                             ["model.embed_tokens.weight has shape [2048, 256]", WEIGHTS]),
    # model.safetensors
    "weights_missing": (remove(WEIGHTS), HEADERS, ["holds neither model.safetensors"]),
    "weights_empty": (weights_bytes(lambda d: b""), HEADERS, [WEIGHTS, "truncated file: 0 bytes"]),
    "weights_truncated_header": (weights_bytes(lambda d: d[:100]), HEADERS, [WEIGHTS, "truncated header"]),
    "weights_truncated_data": (weights_bytes(lambda d: d[:len(d) // 2]), HEADERS, [WEIGHTS, "beyond the end of the file"]),
    "weights_header_size_corrupt": (weights_bytes(lambda d: b"\xff" * 8 + d[8:]), HEADERS,
                                    [WEIGHTS, "header size"]),
    "weights_header_not_json": (weights_bytes(header_corrupt), HEADERS, [WEIGHTS, "header is not valid JSON"]),
    "weights_header_not_utf8": (weights_bytes(lambda d: d[:9] + b"\xff" + d[10:]), HEADERS, [WEIGHTS, "UTF-8"]),
    "weights_trailing_bytes": (weights_bytes(lambda d: d + b"\0" * 16), HEADERS, [WEIGHTS, "trailing bytes"]),
    "tensor_missing": (tensors_edit(lambda t: t.pop(DOWN)), HEADERS, ["missing tensor " + DOWN, WEIGHTS]),
    "tensor_wrong_shape": (tensors_edit(lambda t: t.update({UP: t[UP][:, :255].contiguous()})), HEADERS,
                           [UP + " has shape [768, 255], config implies [768, 256]", WEIGHTS]),
    "tensor_transposed": (tensors_edit(lambda t: t.update({UP: t[UP].t().contiguous()})), HEADERS,
                          [UP + " has shape [256, 768]"]),
    "shard_missing": (sharded_with_missing_shard, HEADERS, ["model-00002-of-00002.safetensors"]),
    # weights' values (inspect reads none)
    "weight_nan": (tensors_edit(tensor_set(UP, (3, 5), float("nan"))), VALUES,
                   ["non-finite weights", UP + " (1 NaN, 0 Inf of 196608 values)"]),
    "weight_inf_norm": (tensors_edit(tensor_set("model.norm.weight", 0, float("inf"))), VALUES,
                        ["non-finite weights", "model.norm.weight (0 NaN, 1 Inf of 256 values)"]),
    "weight_nan_and_inf": (tensors_edit(lambda t: (tensor_set(UP, (0, 0), float("nan"))(t),
                                                   tensor_set(DOWN, (1, 1), float("-inf"))(t))), VALUES,
                           [UP + " (1 NaN", DOWN + " (0 NaN, 1 Inf"]),
    # tokenizer
    "tokenizer_bigger_than_embedding": (tokenizer_added_tokens(3), VALUES,
                                        ["tokenizer.json has 2051 ids", "model.embed_tokens.weight in model.safetensors "
                                         "has 2048 rows"]),
    "tokenizer_missing": (remove("tokenizer.json", "tokenizer.model"), VALUES,
                          ["neither tokenizer.json nor tokenizer.model"]),
    "tokenizer_json_garbled": (lambda f: (f / "tokenizer.json").write_text("{\"model\": "), VALUES, ["tokenizer.json"]),
    "tokenizer_json_no_model": (tokenizer_json_edit(lambda t: t.pop("model")), VALUES, ["tokenizer.json", "model"]),
    "tokenizer_json_unknown_model_type": (tokenizer_json_edit(lambda t: t["model"].update({"type": "WordPiece"})),
                                          VALUES, ["tokenizer.json", "WordPiece"]),
}


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    path = tmp_path_factory.mktemp("text") / "text.jsonl"
    path.write_text(json.dumps({"text": "In the beginning God created the heaven and the earth. " * 8}) + "\n")
    return path


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    path = tmp_path_factory.mktemp("task") / "choice.jsonl"
    path.write_text(json.dumps({"context": "The sky is", "choices": ["blue", "green"], "gold": 0}) + "\n")
    return path


def command(name, model, out, text, task):
    """The command line of `name` on `model`, writing under `out`."""
    device = ("--device", "cpu", "--dtype", "fp32")
    if name == "inspect":
        return ("inspect", model)
    if name == "ppl":
        return ("eval", "ppl", model, "--text", text, "--ctx", 64, *device, "-o", out / "report")
    if name == "tasks":
        return ("eval", "tasks", model, "--tasks", task, *device, "-o", out / "report", "--output_path", out / "lm_eval")
    return ("restore", ROOT / "configs" / "demo_cpu.yaml", f"teacher={model}", f"output={out / 'restored'}",
            "steps=1", "ctx_len=32", "warmup_steps=0", "eval_every=0", "device=cpu", "dtype=fp32",
            f"data=[{ROOT / 'data' / 'demo' / 'restore.jsonl'}]")


def fails_cleanly(r, out, messages):
    assert r.returncode == 1, r.stdout + r.stderr
    assert "linear-ard: error:" in r.stderr, r.stderr
    for m in messages:
        assert m in r.stderr, f"{m!r} not in {r.stderr!r}"
    assert not out.exists() or not any(out.iterdir()), sorted(out.rglob("*"))


@pytest.mark.parametrize("case,name", [(c, n) for c, (_, names, _) in CASES.items() for n in names])
def test_malformed_model_folder(case, name, tmp_path, text, task):
    make, _, messages = CASES[case]
    model = tmp_path / "model"
    shutil.copytree(DEMO, model)
    make(model)
    out = tmp_path / "out"
    out.mkdir()
    r = run(*command(name, model, out, text, task))
    fails_cleanly(r, out, messages)


def test_the_untouched_demo_passes_every_command(tmp_path, text, task):
    """The battery's baseline: the same commands on the unbroken copy succeed."""
    model = tmp_path / "model"
    shutil.copytree(DEMO, model)
    for name in HEADERS:
        out = tmp_path / name
        out.mkdir()
        r = run(*command(name, model, out, text, task))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "warning" not in r.stderr, r.stderr
    r = run("inspect", model)
    n = sum(t.numel() for t in load_file(str(model / WEIGHTS)).values())
    assert f"parameters:        {n} (" in r.stdout and "in the weights' headers" in r.stdout, r.stdout


def test_weights_finite_but_overflowing_give_no_perplexity(tmp_path, text):
    """Finite weights whose scores overflow (final norm at 1e30: log-probabilities near -1e30, whose
    exp overflows): the perplexity is an error, never printed as inf or nan."""
    model = tmp_path / "model"
    shutil.copytree(DEMO, model)
    tensors_edit(lambda t: t["model.norm.weight"].fill_(1e30))(model)
    out = tmp_path / "out"
    out.mkdir()
    r = run(*command("ppl", model, out, text, None))
    fails_cleanly(r, out, ["perplexity at ctx 64 is not finite"])
    assert "nan" not in r.stdout.lower(), r.stdout


# ---- task files for `eval tasks`

GOOD = {"context": "The sky is", "choices": ["blue", "green"], "gold": 0}
TASK_CASES = {
    "line_not_json": (["{\"context\": \"a\", "], 1, "not valid JSON"),
    "line_not_an_object": (["[1, 2]"], 1, "expected a JSON object"),
    "context_missing": ([{"choices": ["a", "b"], "gold": 0}], 1, "missing string field \"context\""),
    "context_not_a_string": ([{"context": 3, "choices": ["a"], "gold": 0}], 1, "missing string field \"context\""),
    "choices_empty": ([{"context": "c", "choices": [], "gold": 0}], 1, "\"choices\" must be a non-empty list"),
    "choice_empty_string": ([{"context": "c", "choices": ["a", ""], "gold": 0}], 1, "every choice must be a non-empty"),
    "gold_missing": ([{"context": "c", "choices": ["a", "b"]}], 1, "missing integer field \"gold\""),
    "gold_out_of_range": ([GOOD, {"context": "c", "choices": ["a", "b"], "gold": 2}], 2, "\"gold\" 2 is out of range"),
    "gold_negative": ([{"context": "c", "choices": ["a", "b"], "gold": -1}], 1, "\"gold\" -1 is out of range"),
    "gold_not_an_integer": ([{"context": "c", "choices": ["a", "b"], "gold": "0"}], 1, "\"gold\" must be an integer"),
    "both_kinds": ([{"context": "c", "choices": ["a"], "gold": 0, "continuation": "x"}], 1, "exactly one of"),
    "neither_kind": ([{"context": "c"}], 1, "exactly one of"),
    "continuation_empty": ([{"context": "c", "continuation": ""}], 1, "\"continuation\" must be a non-empty string"),
    "kinds_mixed": ([GOOD, {"context": "c", "continuation": "x"}], 2, "line in a"),
    "bad_line_after_good_ones": ([GOOD, GOOD, "not json"], 3, "not valid JSON"),
}


@pytest.mark.parametrize("case", list(TASK_CASES))
def test_malformed_task_file(case, tmp_path):
    lines, line, message = TASK_CASES[case]
    path = tmp_path / f"{case}.jsonl"
    path.write_text("".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines))
    out = tmp_path / "out"
    out.mkdir()
    r = run("eval", "tasks", DEMO, "--tasks", path, "--device", "cpu", "-o", out / "report",
            "--output_path", out / "lm_eval")
    fails_cleanly(r, out, [f"{path}:{line}: ", message])


def test_empty_task_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    out = tmp_path / "out"
    out.mkdir()
    r = run("eval", "tasks", DEMO, "--tasks", path, "--device", "cpu", "-o", out / "report")
    fails_cleanly(r, out, [f"{path}: no documents"])


# ---- legal but suspicious: beyond the native context of an unscaled model


def test_eval_beyond_the_native_context_warns_and_goes_on(tmp_path):
    """models/demo: max_position_embeddings 256, no RoPE scaling."""
    text = tmp_path / "long.txt"
    text.write_text("In the beginning God created the heaven and the earth. " * 80)
    r = run("eval", "ppl", DEMO, "--text", text, "--ctx", 128, 512, "--device", "cpu", "-o", tmp_path / "ppl")
    assert r.returncode == 0, r.stderr
    warnings = [l for l in r.stderr.splitlines() if l.startswith("linear-ard: warning:")]
    assert len(warnings) == 1, r.stderr  # --ctx 512 only: 128 is within the native 256
    assert "perplexity windows of 512 tokens" in warnings[0] and "max_position_embeddings 256" in warnings[0]
    assert "not scaled" in warnings[0]
    assert len(json.loads((tmp_path / "ppl.json").read_text())["results"]) == 2
    r = run("eval", "passkey", DEMO, "--lengths", 300, "--depths", 0.5, "--samples", 1, "--max-new-tokens", 4,
            "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert "linear-ard: warning:" in r.stderr and "passkey prompts of 300 tokens" in r.stderr, r.stderr
    r = run("eval", "passkey", DEMO, "--lengths", 200, "--depths", 0.5, "--samples", 1, "--max-new-tokens", 4,
            "--device", "cpu")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


# ---- pretraining from a shape: the same memory rule before the random weights are drawn


@pytest.mark.parametrize("key,value", [("num_hidden_layers", 10**12), ("hidden_size", 2**36)])
def test_pretrain_of_a_shape_beyond_memory_is_refused_naming_the_number(key, value, tmp_path):
    out = tmp_path / "out"
    r = run("pretrain", ROOT / "configs" / "pretrain_demo.yaml", f"pretrain.tokenizer={DEMO}",
            f"data=[{ROOT / 'data' / 'demo' / 'restore.jsonl'}]", f"pretrain.model.{key}={value}",
            "pretrain.model.head_dim=64", f"output={out}", "steps=1", "device=cpu", "dtype=fp32")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"config key 'pretrain.model'" in r.stderr and f"{key}={value}" in r.stderr, r.stderr
    assert "of memory available on cpu" in r.stderr, r.stderr
    assert not out.exists() or not any(out.iterdir())
