"""The real default model, SmolLM2-135M-Instruct imported from its GGUF (scripts/import_gguf.py),
against transformers on the same folder, on CPU in fp32:

- the imported folder is what a plain transformers save writes (bf16 weights, no
  quantization_config, tied embeddings, chat template kept) and transformers loads it;
- our logits vs transformers' on two prompts of >= 1K tokens, for the native RoPE and the PI x4 and
  YaRN x4 variants the experiments use (relative error <= 1e-4, as the small-config parity test);
- greedy generation of 20 tokens, token for token, for plain and chat-template prompts;
- our tokenizer's ids and decodes vs HF tokenizers' on the shared hard strings and chat-template
  conversations (special tokens included).
"""

import json
import os
import subprocess

import pytest
import torch
import transformers
from safetensors import safe_open
from safetensors.torch import load_file

from real_model import ROOT, smollm2_folder
from test_model_parity import FP32_TOLERANCE, model_dump_path, rel_err
from tokenizer_strings import corpus
from tokenizer_tool import check_against_tokenizers

PROMPT_TOKENS = 1100
GENERATE = 20
VARIANTS = {
    "native": None,
    "pi4": {"rope_type": "linear", "factor": 4.0, "rope_theta": 100000.0},
    "yarn4": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192,
              "rope_theta": 100000.0},
}


def variant_folder(name, tmp_path):
    """The imported folder, or a copy whose config.json carries the variant's RoPE (weights linked)."""
    src = smollm2_folder()
    if VARIANTS[name] is None:
        return src
    dst = tmp_path / name
    dst.mkdir()
    for f in src.iterdir():
        if f.name != "config.json":
            os.symlink(f, dst / f.name)
    config = json.loads((src / "config.json").read_text())
    config["rope_parameters"] = VARIANTS[name]
    config["max_position_embeddings"] = 4 * 8192
    (dst / "config.json").write_text(json.dumps(config, indent=2))
    return dst


def long_prompts(tokenizer):
    """Two rows of PROMPT_TOKENS ids: English prose (held-out KJV chapters) and the repository's own
    C++/Python/Markdown (code, numbers, whitespace runs)."""
    prose = "\n\n".join(json.loads(line)["text"] for line in (ROOT / "data/demo/heldout.jsonl").open())
    code = "\n".join(p.read_text() for p in sorted((ROOT / "src/model").glob("*.cpp")))
    rows = [tokenizer(t, add_special_tokens=False)["input_ids"][:PROMPT_TOKENS] for t in (prose, code)]
    assert all(len(r) == PROMPT_TOKENS for r in rows)
    return torch.tensor(rows)


def ours(folder, ids, tmp_path, generate=0):
    out = tmp_path / "dump.safetensors"
    cmd = [model_dump_path(), str(folder), str(out), "--ids",
           ",".join(" ".join(map(str, r)) for r in ids.tolist()), "--dtype", "float32"]
    if generate:
        cmd += ["--generate", str(generate)]
    subprocess.run(cmd, check=True)
    return load_file(out)


def test_import_writes_a_plain_hf_folder():
    folder = smollm2_folder()
    config = json.loads((folder / "config.json").read_text())
    assert "quantization_config" not in config
    assert config["dtype"] == "bfloat16" and config["tie_word_embeddings"] is True
    assert config["architectures"] == ["LlamaForCausalLM"] and config["max_position_embeddings"] == 8192
    with safe_open(folder / "model.safetensors", "pt") as f:
        names = set(f.keys())
        assert {f.get_slice(n).get_dtype() for n in names} == {"BF16"}
    assert "lm_head.weight" not in names and "model.embed_tokens.weight" in names
    assert len(names) == 2 + 30 * 9  # embeddings, final norm, 9 tensors per layer
    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
    assert "<|im_start|>" in tokenizer_config["chat_template"]
    assert (folder / "tokenizer.json").is_file()


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_logits_match_transformers(variant, tmp_path):
    folder = variant_folder(variant, tmp_path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    ids = long_prompts(tokenizer)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        ref = model(ids).logits
    got = ours(folder, ids, tmp_path)["logits"]
    assert got.shape == ref.shape
    err = rel_err(got, ref)
    agree = (got.argmax(-1) == ref.argmax(-1)).float().mean().item()
    assert err <= FP32_TOLERANCE, f"{variant}: logits relative error {err:.2e}"
    assert agree >= 0.999, f"{variant}: next-token argmax agrees on {agree:.4f} of positions"


@pytest.mark.parametrize("kind", ["plain", "chat"])
def test_greedy_generation_matches_transformers(kind, tmp_path):
    folder = smollm2_folder()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    if kind == "plain":
        prompt = tokenizer("The capital of France is", add_special_tokens=False)["input_ids"]
    else:
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Name three primary colours."}],
                                               add_generation_prompt=True, tokenize=True)
        prompt = prompt["input_ids"] if isinstance(prompt, dict) or hasattr(prompt, "keys") else prompt
    ids = torch.tensor([prompt])
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    model.generation_config.eos_token_id = None  # exactly GENERATE tokens on both sides
    with torch.no_grad():
        ref = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=GENERATE,
                             do_sample=False)
    got = ours(folder, ids, tmp_path, generate=GENERATE)["generated"]
    assert got.tolist() == ref.tolist(), (tokenizer.decode(got[0]), tokenizer.decode(ref[0]))
    if kind == "plain":
        assert "Paris" in tokenizer.decode(got[0, len(prompt):])


def test_tokenizer_matches_hf_tokenizers(tmp_path):
    """Our ids and decodes vs HF tokenizers on the imported tokenizer.json: the shared hard strings
    (code, numbers, whitespace runs, unicode, emoji, CJK, ...) plus chat-template conversations,
    whose <|im_start|>/<|im_end|> must come out as the special tokens."""
    folder = smollm2_folder()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    chats = [tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=False) for c in (
        [{"role": "user", "content": "What is 12345 + 67890?"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "日本の首都は？ 🙂"},
         {"role": "assistant", "content": "東京です。"}, {"role": "user", "content": "def f(x):\n\treturn x"}],
    )]
    texts = corpus() + chats
    assert len(texts) >= 200
    check_against_tokenizers(folder, texts, tmp_path)
    im_start, im_end = tokenizer.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>"])
    ids = tokenizer(chats[1], add_special_tokens=False)["input_ids"]
    assert ids.count(im_start) == 5 and ids.count(im_end) == 4  # 4 turns + the generation prompt
