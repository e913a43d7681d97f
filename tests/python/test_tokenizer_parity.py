"""Our tokenizers (driven through <build>/tests/io/tokenizer_tool) against the references.

- tokenizer.json: ids and decoded text against PyPI `tokenizers` on the real LLaMA-2 and LLaMA-3
  vocabularies (../shared/fixtures/tokenizers/, skipped when absent) and on variants of them
  (Metaspace pre-tokenizer with each prepend scheme, merges as pairs, a BOS/EOS template, added
  tokens with lstrip/rstrip/single_word/normalized); BOS/EOS handling and full ids against
  transformers' AutoTokenizer.
- tokenizer.model: a tiny SentencePiece BPE model trained here against Python `sentencepiece`.
The strings are tests/python/tokenizer_strings.py's.
"""

import json
import os
import random
import subprocess
from pathlib import Path

import pytest
from tokenizer_strings import FIXED, corpus
from tokenizer_tool import check_against_tokenizers, compare, encode_requests, run_tool, tool_path

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(os.environ.get("LINEAR_ARD_TOKENIZER_FIXTURES", ROOT.parent / "shared" / "fixtures" / "tokenizers"))


def _fixture(name: str) -> Path:
    folder = FIXTURES / name
    if not (folder / "tokenizer.json").exists():
        pytest.skip(f"real tokenizer files not found at {folder} (they live outside the repository)")
    return folder


# ---------------------------------------------------------------------------------------------
# tokenizer.json against `tokenizers`


@pytest.mark.parametrize("name", ["llama2", "llama3"])
def test_real_vocabulary_matches_tokenizers(name, tmp_path):
    check_against_tokenizers(_fixture(name), corpus(), tmp_path)


def _variant(tmp_path: Path, base: str, edit) -> Path:
    spec = json.loads((_fixture(base) / "tokenizer.json").read_text())
    edit(spec)
    folder = tmp_path / "variant"
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False))
    return folder


def _metaspace(scheme: str, split: bool):
    def edit(spec):
        spec["normalizer"] = None
        spec["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split}
        spec["decoder"] = {"type": "Sequence", "decoders": [
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split},
            {"type": "ByteFallback"}, {"type": "Fuse"}]}
    return edit


def _merges_as_pairs_with_bos_eos(spec):
    spec["model"]["merges"] = [m.split(" ") for m in spec["model"]["merges"]]
    spec["post_processor"] = {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                    {"SpecialToken": {"id": "<|end_of_text|>", "type_id": 0}}],
         "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000], "tokens": ["<|begin_of_text|>"]},
                            "<|end_of_text|>": {"id": "<|end_of_text|>", "ids": [128001], "tokens": ["<|end_of_text|>"]}}}]}


def _added(content, id_, special, lstrip=False, rstrip=False, single_word=False, normalized=False):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": normalized, "special": special}


def _llama3_added_tokens(spec):
    # "magic" is also a vocabulary entry: HF gives it that id and numbers the others without it.
    spec["added_tokens"] += [
        _added("<|lr|>", 128256, True, lstrip=True, rstrip=True),
        _added("<|r|>", 128257, True, rstrip=True),
        _added("<|wand|>", 128258, False, lstrip=True),
        _added("magic", 128259, False, single_word=True),
    ]


def _llama2_added_tokens(spec):
    spec["added_tokens"] += [
        _added("▁Xyz", 32000, False, normalized=True),
        _added("<pad>", 32001, True, lstrip=True, rstrip=True),
        _added("magic", 32002, False, single_word=True),
    ]


ADDED_TOKEN_TEXTS = [
    "a <|lr|>  b", "<|lr|>", "  <|lr|>", "x<|lr|>y", "<|lr|><|lr|>", " \t<|lr|>\n z", "a <|r|>  b", "<|r|> <|lr|> c",
    "magic", "amagic", "magic!", " magic ", "magic_x", "1magic", "élmagic", "magic magicmagic magic",
    "<|wand|>", "  <|wand|>", "a  <|wand|> b", "magić", "magic²", "‿magic", "magic‍", "Xyz", " Xyz", "Xyz Xyz", "aXyz", "<pad>", "a <pad> b", "a  <pad>\n\nb",
    "<s> Xyz <pad> magic", "<|begin_of_text|> magic <|lr|> <|wand|>",
]

VARIANTS = {
    "llama2-metaspace-always": ("llama2", _metaspace("always", False)),
    "llama2-metaspace-first-split": ("llama2", _metaspace("first", True)),
    "llama2-metaspace-never": ("llama2", _metaspace("never", False)),
    "llama2-added-tokens": ("llama2", _llama2_added_tokens),
    "llama3-merge-pairs-bos-eos": ("llama3", _merges_as_pairs_with_bos_eos),
    "llama3-added-tokens": ("llama3", _llama3_added_tokens),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_matches_tokenizers(variant, tmp_path):
    base, edit = VARIANTS[variant]
    texts = FIXED + ADDED_TOKEN_TEXTS + corpus()[len(FIXED):len(FIXED) + 20]
    check_against_tokenizers(_variant(tmp_path, base, edit), texts, tmp_path)


# ---------------------------------------------------------------------------------------------
# BOS/EOS and full ids against transformers


def _transformers(folder: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


@pytest.mark.parametrize("name", ["llama2", "llama3"])
def test_special_tokens_match_transformers(name, tmp_path):
    folder = _fixture(name)
    hf = _transformers(folder)
    texts = ["Hello world", "", "a<s>b", "<|begin_of_text|>x"]
    ours = run_tool(folder, encode_requests(texts, True) + encode_requests(texts, False), tmp_path)
    with_special, without = ours[:len(texts)], ours[len(texts):]
    for text, ours_with, ours_without in zip(texts, with_special, without):
        theirs_with, theirs_without = hf.encode(text), hf.encode(text, add_special_tokens=False)
        # transformers 5 rebuilds LLaMA-2's pipeline (see docs/tokenizers.md), so compare what the
        # special tokens add around the text rather than the text's own ids.
        k = theirs_with.index(theirs_without[0]) if theirs_without else len(theirs_with)
        prefix, suffix = theirs_with[:k], theirs_with[k + len(theirs_without):]
        assert ours_with == prefix + ours_without + suffix, f"{text!r}: {ours_with} vs HF {theirs_with}"
    info = json.loads(subprocess.run([str(tool_path()), str(folder), "info"], check=True, capture_output=True, text=True).stdout)
    assert (info["bos_id"], info["eos_id"]) == (hf.bos_token_id, hf.eos_token_id)
    assert info["vocab_size"] == len(hf)


def test_llama3_matches_transformers(tmp_path):
    folder = _fixture("llama3")
    hf = _transformers(folder)
    texts = corpus()
    compare("llama3 vs transformers", folder, texts, [hf.encode(t) for t in texts],
            [hf.encode(t, add_special_tokens=False) for t in texts],
            lambda ids, skip: hf.decode(ids, skip_special_tokens=skip), tmp_path)


def test_llama2_as_transformers_rebuilds_it(tmp_path):
    """transformers 5's LlamaTokenizer replaces the file's normalizer by a Metaspace pre-tokenizer;
    saved back as tokenizer.json, that pipeline must give transformers' ids exactly."""
    hf = _transformers(_fixture("llama2"))
    folder = tmp_path / "llama2-transformers"
    folder.mkdir()
    hf.backend_tokenizer.save(str(folder / "tokenizer.json"))
    texts = corpus()
    compare("llama2 (transformers pipeline)", folder, texts, [hf.encode(t) for t in texts],
            [hf.encode(t, add_special_tokens=False) for t in texts],
            lambda ids, skip: hf.decode(ids, skip_special_tokens=skip), tmp_path)


# ---------------------------------------------------------------------------------------------
# tokenizer.model against sentencepiece


@pytest.fixture(scope="module")
def sentencepiece_folder(tmp_path_factory):
    import sentencepiece as spm

    folder = tmp_path_factory.mktemp("sentencepiece")
    rng = random.Random(7)
    lines = [" ".join(rng.choice(FIXED[17:50]).split()[: rng.randrange(1, 8)]) for _ in range(3000)]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_prefix=str(folder / "tokenizer"), vocab_size=800, model_type="bpe",
        byte_fallback=True, character_coverage=0.9995, add_dummy_prefix=True, remove_extra_whitespaces=False,
        minloglevel=2)
    (folder / "tokenizer.vocab").unlink()
    return folder


@pytest.mark.parametrize("add_eos", [False, True])
def test_sentencepiece_matches_python(sentencepiece_folder, add_eos, tmp_path):
    import sentencepiece as spm

    if add_eos:
        (sentencepiece_folder / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True, "add_eos_token": True}))
    else:
        (sentencepiece_folder / "tokenizer_config.json").unlink(missing_ok=True)
    sp = spm.SentencePieceProcessor(model_file=str(sentencepiece_folder / "tokenizer.model"))
    texts = corpus()
    theirs = [[sp.bos_id()] + sp.encode(t) + ([sp.eos_id()] if add_eos else []) for t in texts]
    compare("sentencepiece", sentencepiece_folder, texts, theirs, [sp.encode(t) for t in texts],
            # SentencePiece drops control tokens; we show them when asked to (docs/tokenizers.md).
            lambda ids, skip: sp.decode(ids) if skip else "<s>" + sp.decode(ids) + ("</s>" if add_eos else ""),
            tmp_path)


# ---------------------------------------------------------------------------------------------
# Speed


@pytest.mark.parametrize("name", ["llama2", "llama3"])
def test_encode_one_megabyte_is_fast(name, tmp_path):
    folder = _fixture(name)
    text = "\n".join(corpus())
    text = text * (1_000_000 // len(text.encode()) + 1)
    path = tmp_path / "text.txt"
    path.write_text(text)
    out = subprocess.run([str(tool_path()), str(folder), "time", str(path), "2"], check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    print(f"{name}: {result}")
    # Generous bound for shared CI machines; docs/tokenizers.md has measured numbers.
    assert result["seconds"] < 5.0
