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
import torch
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


def header_dtype_swap(old, new):
    """The safetensors header with every `old` dtype named `new` (the bytes untouched: same sizes for
    F16 and BF16), padded with spaces to keep the data 8-byte aligned."""
    def edit(data):
        n = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8:8 + n])
        for name, entry in header.items():
            if name != "__metadata__" and entry["dtype"] == old:
                entry["dtype"] = new
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        return struct.pack("<Q", len(text)) + text + data[8 + n:]
    return edit


def as_f16_under_bf16_header(folder):
    tensors_edit(lambda t: t.update({k: v.to(torch.float16) for k, v in t.items()}))(folder)
    weights_bytes(header_dtype_swap("F16", "BF16"))(folder)


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
    # tensors the config has no place for: a config.json that lost a layer, another architecture's tensor
    "config_one_layer_fewer": (config_edit(num_hidden_layers=3), HEADERS,
                               ["model.layers.3.", "belongs to layer 3, but num_hidden_layers=3 gives layers 0 to 2",
                                WEIGHTS]),
    "tensor_of_another_architecture": (tensors_edit(lambda t: t.update(
        {"model.layers.0.self_attn.q_norm.weight": torch.ones(64, dtype=torch.bfloat16)})), HEADERS,
        ["unexpected tensor model.layers.0.self_attn.q_norm.weight"]),
    # positions and RoPE factors no model can have
    "huge_max_position_embeddings": (config_edit(max_position_embeddings=10**18), HEADERS,
                                     ["max_position_embeddings must be <= 16777216", "1000000000000000000"]),
    "max_position_embeddings_beyond_int64": (config_edit(max_position_embeddings=1e20), HEADERS,
                                             ["max_position_embeddings is beyond any size"]),
    "dynamic_factor_below_one": (config_edit(rope_scaling={"rope_type": "dynamic", "factor": 0.5}), HEADERS,
                                 ["rope factor of rope type dynamic must be >= 1", "got 0.5"]),
    "linear_factor_below_one": (config_edit(rope_scaling={"rope_type": "linear", "factor": 0.25}), HEADERS,
                                ["rope factor of rope type linear must be >= 1", "got 0.25"]),
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
    # F16 and BF16 take the same bytes: a header naming the wrong one is found from the values
    "bf16_data_under_f16_header": (weights_bytes(header_dtype_swap("BF16", "F16")), VALUES,
                                   ["is stored as F16, but its values read so have RMS",
                                    "(BF16 data under an F16 header)"]),
    "f16_data_under_bf16_header": (as_f16_under_bf16_header, VALUES,
                                   ["is stored as BF16", "(F16 data under a BF16 header)"]),
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
    "single_choice": ([GOOD, {"context": "c", "choices": ["a"], "gold": 0}], 2,
                      "\"choices\" has 1 choice: a question needs 2 or more"),
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


# ---- arguments: every numeric option of every subcommand checked before anything runs, a usage
# error (exit status 2) naming the option and the value it got

def args_cases(text, task, tmp):
    ppl = ("eval", "ppl", DEMO, "--text", text, "--device", "cpu")
    tasks = ("eval", "tasks", DEMO, "--tasks", task, "--device", "cpu")
    passkey = ("eval", "passkey", DEMO, "--device", "cpu")
    ruler = ("eval", "ruler", DEMO, "--device", "cpu")
    compare = ("eval", "compare", DEMO, DEMO, "--names", "a", "b", "--device", "cpu")
    tok = ("tokenizer-train", "--data", text, "--output", tmp / "tok")
    requests = ("eval", "requests", DEMO, "--in", text, "--out", tmp / "answers.jsonl", "--device", "cpu")
    return {
        "ppl_ctx_one": ((*ppl, "--ctx", 1), "--ctx: must be an integer >= 2, got 1"),
        "ppl_stride_negative": ((*ppl, "--ctx", 64, "--stride", -1), "--stride: must be an integer >= 0, got -1"),
        "ppl_stride_beyond_ctx": ((*ppl, "--ctx", 64, 128, "--stride", 100), "--stride 100 exceeds --ctx 64"),
        "ppl_batch_zero": ((*ppl, "--ctx", 64, "--batch-size", 0), "must be an integer >= 1, got 0"),
        "tasks_limit_negative": ((*tasks, "--limit", -1), "--limit: must be an integer >= 0, got -1"),
        "tasks_fewshot_negative": ((*tasks, "--num_fewshot", -1), "must be an integer >= 0, got -1"),
        "tasks_batch_zero": ((*tasks, "--batch-size", 0), "must be an integer >= 1, got 0"),
        "tasks_max_length_one": ((*tasks, "--max_length", 1), "must be 0 or an integer >= 2, got 1"),
        "passkey_samples_zero": ((*passkey, "--lengths", 200, "--samples", 0), "--samples: must be an integer >= 1, got 0"),
        "passkey_length_zero": ((*passkey, "--lengths", 0), "--lengths: must be an integer >= 1, got 0"),
        "passkey_length_not_an_integer": ((*passkey, "--lengths", "1e12"), "--lengths: must be an integer >= 1, got 1e12"),
        "passkey_depth_beyond_one": ((*passkey, "--lengths", 200, "--depths", 1.5), "must be a number in [0, 1], got 1.5"),
        "passkey_depth_nan": ((*passkey, "--lengths", 200, "--depths", "nan"), "must be a number in [0, 1], got nan"),
        "passkey_no_new_tokens": ((*passkey, "--lengths", 200, "--max-new-tokens", 0), "must be an integer >= 1, got 0"),
        "ruler_samples_zero": ((*ruler, "--lengths", 200, "--samples", 0), "--samples: must be an integer >= 1, got 0"),
        "ruler_length_negative": ((*ruler, "--lengths", -5), "--lengths: must be an integer >= 1, got -5"),
        "compare_ctx_one": ((*compare, "--text", text, "--ctx", 1), "--ctx: must be an integer >= 2, got 1"),
        "compare_limit_negative": ((*compare, "--tasks", task, "--limit", -3), "must be an integer >= 0, got -3"),
        "compare_passkey_samples_zero": ((*compare, "--passkey-lengths", 200, "--passkey-samples", 0),
                                         "must be an integer >= 1, got 0"),
        "compare_stride_beyond_ctx": ((*compare, "--text", text, "--ctx", 64, "--stride", 65), "--stride 65 exceeds"),
        "tokenizer_vocab_below_300": ((*tok, "--vocab-size", 100), "--vocab-size: must be an integer >= 300, got 100"),
        "tokenizer_threads_negative": ((*tok, "--threads", -1), "--threads: must be an integer >= 0, got -1"),
        "tokenizer_sentences_negative": ((*tok, "--max-sentences", -1), "must be an integer >= 0, got -1"),
        "tokenizer_coverage_zero": ((*tok, "--character-coverage", 0), "must be a number in (0, 1], got 0"),
        "tokenizer_coverage_above_one": ((*tok, "--character-coverage", 1.5), "must be a number in (0, 1], got 1.5"),
        "requests_batch_zero": ((*requests, "--batch-size", 0), "must be an integer >= 1, got 0"),
        "requests_max_length_one": ((*requests, "--max_length", 1), "must be 0 or an integer >= 2, got 1"),
        "requests_no_generated_tokens": ((*requests, "--max_gen_toks", 0), "must be an integer >= 1, got 0"),
    }


ARG_CASES = list(args_cases(Path("t"), Path("t"), Path("t")))


@pytest.mark.parametrize("case", ARG_CASES)
def test_numeric_argument_out_of_range_is_a_usage_error(case, text, task, tmp_path):
    args, message = args_cases(text, task, tmp_path)[case]
    r = run(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "tok").exists() and not (tmp_path / "answers.jsonl").exists()


def test_output_inside_the_model_or_over_an_input_is_refused(tmp_path, text, task):
    model = tmp_path / "model"
    shutil.copytree(DEMO, model)
    config = (model / "config.json").read_bytes()
    device = ("--device", "cpu")
    stem = text.with_suffix("")  # -o STEM writes STEM.json: text.jsonl's neighbour, so make an input STEM.json
    json_text = stem.with_suffix(".json")
    json_text.write_text(json.dumps([{"text": "In the beginning God created the heaven and the earth. " * 8}]))
    cases = [
        (("eval", "ppl", model, "--text", text, "--ctx", 64, *device, "-o", model / "config"), "inside the model folder"),
        (("eval", "ppl", model, "--text", json_text, "--ctx", 64, *device, "-o", stem), "one of the command's inputs"),
        (("eval", "tasks", model, "--tasks", task, *device, "--output_path", model), "inside the model folder"),
        (("eval", "tasks", model, "--tasks", task, *device, "-o", task.with_suffix("")), None),
        (("eval", "passkey", model, "--lengths", 200, *device, "-o", model / "sub" / "report"), "inside the model folder"),
        (("eval", "compare", DEMO, model, "--names", "a", "b", "--passkey-lengths", 200, *device, "-o", model / "r"),
         "inside the model folder"),
        (("eval", "requests", model, "--in", text, "--out", model / "answers.jsonl", *device), "inside the model folder"),
        (("eval", "requests", model, "--in", text, "--out", text, *device), "one of the command's inputs"),
        (("export-gguf", model, model / "model.gguf"), "inside the model folder"),
    ]
    for args, message in cases:
        r = run(*args)
        if message is None:  # choice.jsonl's stem writes choice.json and choice.md: neither is an input
            assert r.returncode == 0, r.stderr
            continue
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, r.stderr
    assert (model / "config.json").read_bytes() == config
    assert sorted(p.name for p in model.iterdir()) == sorted(p.name for p in DEMO.iterdir())


@pytest.mark.parametrize("args,message", [
    (("restor", "x.yaml"), "unknown command 'restor' (commands: inspect, diagnose, restore, tune, pretrain, tokenizer-train, eval, "
                           "export-gguf); did you mean 'restore'?"),
    (("eval", "pll", "m"), "unknown eval command 'pll' (eval commands: ppl, tasks, passkey, ruler, compare, requests); "
                           "did you mean 'ppl'?"),
    (("frobnicate",), "unknown command 'frobnicate' (commands: inspect, diagnose, restore, tune, pretrain, tokenizer-train, eval, "
                   "export-gguf)\n"),
])
def test_unknown_command_is_named_with_the_valid_ones(args, message):
    r = run(*args)
    assert r.returncode == 2, r.stderr
    assert r.stderr == "linear-ard: error: " + message + ("" if message.endswith("\n") else "\n"), r.stderr


# ---- the memory plan of evaluation: refused from the sizes, before anything proportional is built

@pytest.mark.parametrize("args,what", [
    (("eval", "passkey", DEMO, "--lengths", 10**12), "eval passkey at lengths 1000000000000"),
    (("eval", "passkey", DEMO, "--lengths", 200, "--samples", 10**12), "eval passkey at lengths 200 (5000000000000 prompts)"),
    (("eval", "ruler", DEMO, "--lengths", 10**12, "--tasks", "niah_single_1"), "eval ruler at lengths 1000000000000"),
    (("eval", "compare", DEMO, "--passkey-lengths", 10**12), "eval passkey at lengths 1000000000000"),
])
def test_evaluation_beyond_memory_is_refused_by_the_plan(args, what, tmp_path):
    import time
    start = time.monotonic()
    r = run(*args, "--device", "cpu", "-o", tmp_path / "report")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "linear-ard: error: " + what in r.stderr, r.stderr
    assert "needs an estimated" in r.stderr and "of memory available on cpu" in r.stderr, r.stderr
    assert "weights" in r.stderr and "bad_alloc" not in r.stderr
    assert time.monotonic() - start < 30
    assert not list(tmp_path.iterdir())


def test_a_large_batch_is_planned_for_the_windows_and_requests_there_are(tmp_path, text, task):
    """--batch-size beyond the text's windows or the task's requests plans for those: no refusal."""
    r = run("eval", "ppl", DEMO, "--text", text, "--ctx", 64, "--batch-size", 100000, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    r = run("eval", "tasks", DEMO, "--tasks", task, "--batch-size", 100000, "--device", "cpu")
    assert r.returncode == 0, r.stderr


def test_pretrain_plan_counts_masters_and_adamw_beside_the_weights(tmp_path):
    """A 6.7e9-parameter shape (LLaMA-7B's): its bf16 weights alone might fit a large host, but
    training also holds fp32 masters, gradients and AdamW's two moments (16 bytes a parameter); the
    plan names each part before a weight is drawn (a 10^6-block batch makes it refuse anywhere)."""
    import re
    import time
    shape = {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32}
    out = tmp_path / "out"
    start = time.monotonic()
    r = run("pretrain", ROOT / "configs" / "pretrain_demo.yaml", f"pretrain.tokenizer={DEMO}",
            f"data=[{ROOT / 'data' / 'demo' / 'restore.jsonl'}]", *(f"pretrain.model.{k}={v}" for k, v in shape.items()),
            "pretrain.model.num_key_value_heads=32", "pretrain.model.tie_word_embeddings=false", f"output={out}",
            "steps=1", "batch_size=1000000", "device=cpu", "dtype=bf16")
    assert r.returncode == 1, r.stdout + r.stderr
    assert time.monotonic() - start < 20  # nothing drawn
    h, f, layers, vocab = 4096, 11008, 32, 2048
    params = 2 * vocab * h + h + layers * (4 * h * h + 3 * h * f + 2 * h)
    adam = float(re.search(r"AdamW moments ([0-9.]+) GiB", r.stderr).group(1))
    weights = float(re.search(r"\(weights ([0-9.]+) GiB", r.stderr).group(1))
    assert abs(adam - 16 * params / 2**30) < 0.01 * adam and abs(weights - 2 * params / 2**30) < 0.01 * weights, r.stderr
    assert "config key 'pretrain.model' (" in r.stderr and "of memory available on cpu" in r.stderr
    assert not out.exists() or not any(out.iterdir())
