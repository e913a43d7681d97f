"""Sharded HF weights and folders between the C++ io layer and transformers: folders that
transformers writes load in C++ with the same tensors; folders the C++ side writes load in
transformers with identical weights and logits, with transformers' shard split, names and index."""

import json

import pytest
import torch
from huggingface_hub import split_torch_state_dict_into_shards
from safetensors.torch import load_file, save_file
from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig, LlamaConfig, LlamaForCausalLM

from io_tool import summary_expect, tool_run, tool_summary

SHARD_BYTES = 20_000
NAMES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    """A tiny random LLaMA saved by transformers in several shards, with tokenizer files."""
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         rope_scaling={"rope_type": "linear", "factor": 2.0})
    model = LlamaForCausalLM(config).eval()
    folder = tmp_path_factory.mktemp("hf") / "tiny"
    model.save_pretrained(folder, max_shard_size=SHARD_BYTES)
    GenerationConfig(bos_token_id=1, eos_token_id=2).save_pretrained(folder)
    (folder / "tokenizer_config.json").write_text('{"model_max_length": 64}')
    (folder / "special_tokens_map.json").write_text('{"bos_token": "<s>"}')
    (folder / "tokenizer.model").write_bytes(bytes(range(256)))
    assert (folder / "model.safetensors.index.json").exists()
    return folder, model


def folder_tensors(folder) -> dict:
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    out = {}
    for shard in sorted(set(index["weight_map"].values())):
        out.update(load_file(str(folder / shard)))
    return out


def config_semantics(folder) -> dict:
    """What transformers makes of config.json. Ours goes through the typed config, which writes the
    legacy rope_scaling form carrying both `rope_type` and the older `type`; only the latter may differ."""
    config = AutoConfig.from_pretrained(folder).to_dict()
    config.pop("_name_or_path")
    config["rope_parameters"].pop("type", None)
    return config


def test_transformers_sharded_folder_loads(hf_folder):
    folder, model = hf_folder
    expected = folder_tensors(folder)
    state = model.state_dict()
    for name, t in expected.items():
        assert torch.equal(t, state[name]), name
    summary_expect(expected, tool_summary(folder)["tensors"], NAMES)


def test_our_sharded_folder_matches_transformers_layout(hf_folder, tmp_path):
    folder, model = hf_folder
    out = tmp_path / "out"
    tool_run("hf-copy", folder, out, SHARD_BYTES)
    tensors = dict(sorted(folder_tensors(folder).items()))
    # Our TensorMap walks names in sorted order; transformers' split on that order must agree.
    split = split_torch_state_dict_into_shards(tensors, max_shard_size=SHARD_BYTES)
    assert split.is_sharded
    index = {"metadata": {"total_parameters": sum(t.numel() for t in tensors.values()), **split.metadata},
             "weight_map": split.tensor_to_filename}
    assert (out / "model.safetensors.index.json").read_text() == json.dumps(index, indent=2, sort_keys=True) + "\n"
    for filename, names in split.filename_to_tensors.items():
        reference = tmp_path / filename
        save_file({n: tensors[n] for n in names}, str(reference), metadata={"format": "pt"})
        assert (out / filename).read_bytes() == reference.read_bytes(), filename
    for name in ("tokenizer_config.json", "special_tokens_map.json", "tokenizer.model"):
        assert (out / name).read_bytes() == (folder / name).read_bytes(), name
    assert config_semantics(out) == config_semantics(folder)
    assert json.loads((out / "generation_config.json").read_text()) == json.loads(
        (folder / "generation_config.json").read_text())
    assert not list(tmp_path.glob("out.tmp.*"))


@pytest.mark.parametrize("shard_bytes", [SHARD_BYTES, 10**9])
def test_saved_folder_logits_match_transformers(hf_folder, tmp_path, shard_bytes):
    """A folder written by the C++ side loads in transformers with identical weights and logits.
    When the C++ model can be driven from Python, its logits on `out` belong here too."""
    folder, model = hf_folder
    out = tmp_path / "out"
    tool_run("hf-copy", folder, out, shard_bytes)
    assert (out / "model.safetensors").exists() == (shard_bytes > SHARD_BYTES * 10)
    loaded = AutoModelForCausalLM.from_pretrained(out).eval()
    reference_state, loaded_state = model.state_dict(), loaded.state_dict()
    assert set(loaded_state) == set(reference_state)
    for name, t in reference_state.items():
        assert torch.equal(loaded_state[name], t), name
    ids = torch.randint(0, model.config.vocab_size, (2, 17), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(loaded(ids).logits, model(ids).logits)


def test_reshard_round_trip(hf_folder, tmp_path):
    folder, _ = hf_folder
    single, sharded = tmp_path / "single", tmp_path / "sharded"
    tool_run("reshard", folder, single, 10**9)
    assert sorted(p.name for p in single.iterdir()) == ["model.safetensors"]
    tool_run("reshard", single, sharded, 4096)
    assert tool_summary(sharded) == tool_summary(folder) == tool_summary(single)
