"""config.json as the C++ io layer writes it, read by transformers 5.23: for each RoPE scaling type
the folder loads without a single warning, its `rope_parameters` is exactly what transformers' own
save_pretrained writes, the legacy `rope_theta` + `rope_scaling` keys alone give the same RoPE,
`dtype` names the dtype of the weights written, and no `quantization_config` is carried over.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_io_config.py
"""

import json
import shutil
import subprocess
import sys

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from io_tool import tool_run

MAX_POSITIONS, NATIVE = 256, 64
HALF_ROTARY = 4  # head_dim 8
ROPES = {
    "linear": {"rope_type": "linear", "factor": 4.0},
    "dynamic": {"rope_type": "dynamic", "factor": 4.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": NATIVE, "beta_fast": 16.0},
    "llama3": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": NATIVE},
    "longrope": {"rope_type": "longrope", "factor": 4.0, "short_factor": [1.0] * HALF_ROTARY,
                 "long_factor": [1.5] * HALF_ROTARY, "original_max_position_embeddings": NATIVE},
}

# Loads each folder with transformers in one fresh process and prints, per folder, every warning
# logged (the "transformers" logger) or raised (Python warnings) while loading it, and the resulting
# config. Progress bars are off; the warn-once cache is cleared between folders, so each load is
# judged on its own.
LOAD_SCRIPT = """
import json, logging, sys, warnings
import transformers
transformers.utils.logging.disable_progress_bar()
records = []
handler = logging.Handler()
handler.emit = lambda r: records.append(r.getMessage())
transformers.utils.logging.get_logger("transformers").addHandler(handler)
for folder in sys.argv[1:]:
    records.clear()
    transformers.utils.logging.warning_once.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    print(json.dumps({"rope_parameters": model.config.rope_parameters, "dtype": str(model.dtype),
                      "warnings": records + [str(w.message) for w in caught]}))
"""


def transformers_load(*folders):
    """[(config fields, the warnings as one string)] of each folder, in order."""
    r = subprocess.run([sys.executable, "-c", LOAD_SCRIPT, *map(str, folders)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    loads = [json.loads(line) for line in r.stdout.splitlines()[-len(folders):]]
    return [({k: v for k, v in d.items() if k != "warnings"}, "\n".join(d["warnings"])) for d in loads]


def tiny_config(rope):
    return LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=1,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=MAX_POSITIONS,
                       rope_parameters=dict(rope, rope_theta=10000.0))


@pytest.mark.parametrize("rope_type", sorted(ROPES))
def test_written_config_is_what_transformers_writes(tmp_path, rope_type):
    torch.manual_seed(0)
    model = LlamaForCausalLM(tiny_config(ROPES[rope_type])).to(torch.bfloat16)
    theirs = tmp_path / "theirs"
    model.save_pretrained(theirs)
    written = json.loads((theirs / "config.json").read_text())
    # A folder converted from a quantized checkpoint, whose config still says so, with a stale dtype.
    source = dict(written, quantization_config={"quant_method": "gguf"}, dtype="float32")
    (theirs / "config.json").write_text(json.dumps(source))
    ours = tmp_path / "ours"
    tool_run("hf-copy", theirs, ours, 10**9)
    config = json.loads((ours / "config.json").read_text())
    assert config["rope_parameters"] == written["rope_parameters"]
    assert "quantization_config" not in config and "torch_dtype" not in config
    assert config["dtype"] == "bfloat16"

    # Legacy readers: rope_theta + rope_scaling alone describe the same RoPE, with no warning either.
    legacy_folder = tmp_path / "legacy"
    shutil.copytree(ours, legacy_folder)
    legacy = dict(config)
    del legacy["rope_parameters"]
    assert legacy["rope_scaling"]["rope_type"] == rope_type and "rope_theta" not in legacy["rope_scaling"]
    (legacy_folder / "config.json").write_text(json.dumps(legacy))

    (loaded, warnings), (legacy_loaded, legacy_warnings) = transformers_load(ours, legacy_folder)
    assert warnings == "", warnings
    assert loaded == {"rope_parameters": written["rope_parameters"], "dtype": "torch.bfloat16"}
    assert legacy_warnings == "", legacy_warnings
    assert legacy_loaded["rope_parameters"] == written["rope_parameters"]


def test_dtype_follows_the_weights(tmp_path):
    """fp32 weights under a config that says bfloat16 (and the legacy torch_dtype): "float32"."""
    model = LlamaForCausalLM(tiny_config({"rope_type": "default"}))
    theirs = tmp_path / "theirs"
    model.save_pretrained(theirs)
    config = json.loads((theirs / "config.json").read_text())
    (theirs / "config.json").write_text(json.dumps(dict(config, dtype="bfloat16", torch_dtype="bfloat16")))
    tool_run("hf-copy", theirs, tmp_path / "ours", 10**9)
    written = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert written["dtype"] == "float32" and "torch_dtype" not in written
    assert written["rope_scaling"] is None
    assert written["rope_parameters"] == config["rope_parameters"]
    [(loaded, warnings)] = transformers_load(tmp_path / "ours")
    assert warnings == "" and loaded["dtype"] == "torch.float32"


def test_the_loader_reports_each_folders_warnings(tmp_path):
    """The check above can fail: an unknown RoPE key is reported, for every folder that has it, in
    one process (transformers warns once per message; the loader clears that between folders)."""
    model = LlamaForCausalLM(tiny_config(ROPES["yarn"]))
    model.save_pretrained(tmp_path / "bogus")
    config = json.loads((tmp_path / "bogus" / "config.json").read_text())
    config["rope_parameters"]["bogus_key"] = 1.0
    (tmp_path / "bogus" / "config.json").write_text(json.dumps(config))
    loads = transformers_load(tmp_path / "bogus", tmp_path / "bogus")
    assert all("bogus_key" in warnings for _, warnings in loads), loads
