"""Whole tokenizers of the families we claim, against PyPI `tokenizers` on the same file.

We have no Qwen, Mistral, Phi-3 or SmolLM files here, so each test builds one: the family's
published tokenizer.json pipeline (normalizer, pre-tokenizer with its exact split pattern, model
options, post-processor, decoder, added tokens) around a small BPE vocabulary that `tokenizers`'
own trainer learns from varied text (this repository's docs and C++ sources and the hard strings).
Then ids with and without special tokens and decoded text (with and without
skip_special_tokens) must equal HF's on every string of tokenizer_strings.corpus(), and byte-level
files must give the text back (NFC-normalized for Qwen). Two more files put the remaining
components (NFKD, StripAccents, Lowercase, Strip, WhitespaceSplit, Punctuation, Digits, NFKC,
Whitespace, Metaspace, a normalized added token) through the same checks.
"""

import json
from pathlib import Path

import pytest
from test_tokenizer_components import LLAMA3_PATTERN, QWEN2_PATTERN, byte_level
from tokenizer_strings import corpus
from tokenizer_tool import compare, decode_requests, run_tool

ROOT = Path(__file__).resolve().parents[2]
METASPACE = "\u2581"


def training_lines() -> list:
    files = sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "src" / "io" / "tokenizer").glob("*.cpp"))
    lines = [line for f in files for line in f.read_text().split("\n")]
    return lines + [line for text in corpus() for line in text.split("\n")]


def added(content, special=True, rstrip=False, normalized=False):
    return {"content": content, "special": special, "rstrip": rstrip, "normalized": normalized}


def template(bos: str):
    """TemplateProcessing that puts `bos` before the sequence (LLaMA, Mistral, Phi-3)."""
    return {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                                                      {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [], "tokens": [bos]}}}


def split(pattern: str):
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def sequence(*steps):
    return {"type": "Sequence", "pretokenizers": list(steps)}


# The SentencePiece-converted families: byte fallback, <unk> fused, "▁" for spaces.
SP_DECODER = {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": METASPACE}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
SP_LEGACY_NORMALIZER = {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": METASPACE}, {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE}]}
SP_SPECIALS = [added("<unk>"), added("<s>"), added("</s>")]

FAMILIES = {
    # Qwen2/2.5: NFC, Qwen's split pattern, byte-level without GPT-2's regex, no BOS.
    "qwen2": dict(byte_level=True, normalizer={"type": "NFC"},
                  pre_tokenizer=sequence(split(QWEN2_PATTERN), byte_level(False, False)),
                  post_processor={"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
                  decoder={"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
                  added=[added("<|endoftext|>"), added("<|im_start|>"), added("<|im_end|>")]),
    # Qwen3: Qwen2's pipeline; its thinking and tool-call tags are added tokens that are not special.
    "qwen3": dict(byte_level=True, normalizer={"type": "NFC"},
                  pre_tokenizer=sequence(split(QWEN2_PATTERN), byte_level(False, False)),
                  post_processor={"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
                  decoder={"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
                  added=[added("<|endoftext|>"), added("<|im_start|>"), added("<|im_end|>"), added("<think>", False),
                         added("</think>", False), added("<tool_call>", False), added("</tool_call>", False)]),
    # LLaMA-3: its split pattern, ignore_merges, BOS through a template after ByteLevel.
    "llama3": dict(byte_level=True, normalizer=None, ignore_merges=True,
                   pre_tokenizer=sequence(split(LLAMA3_PATTERN), byte_level(False, False)),
                   post_processor={"type": "Sequence", "processors": [byte_level(True, True) | {"trim_offsets": False},
                                                                     template("<|begin_of_text|>")]},
                   decoder=byte_level(True, True),
                   added=[added("<|begin_of_text|>"), added("<|end_of_text|>"), added("<|start_header_id|>"),
                          added("<|end_header_id|>"), added("<|eot_id|>")]),
    # SmolLM: single digits, then GPT-2's byte-level regex.
    "smollm": dict(byte_level=True, normalizer=None,
                   pre_tokenizer=sequence({"type": "Digits", "individual_digits": True}, byte_level(False, True)),
                   post_processor=byte_level(True, True) | {"trim_offsets": False}, decoder=byte_level(True, True),
                   added=[added("<|endoftext|>"), added("<|im_start|>"), added("<|im_end|>"), added("<repo_name>"),
                          added("<file_sep>"), added("<filename>")]),
    # LLaMA-2 and Mistral v0.1 as converted from SentencePiece: Prepend + Replace, no pre-tokenizer.
    "llama2-mistral-v0.1": dict(byte_level=False, normalizer=SP_LEGACY_NORMALIZER, pre_tokenizer=None,
                                post_processor=template("<s>"), decoder=SP_DECODER, added=SP_SPECIALS),
    # Phi-3: LLaMA-2's pipeline; its chat tokens swallow the whitespace after them.
    "phi3": dict(byte_level=False, normalizer=SP_LEGACY_NORMALIZER, pre_tokenizer=None,
                 post_processor=template("<s>"), decoder=SP_DECODER,
                 added=SP_SPECIALS + [added("<|endoftext|>"), added("<|assistant|>", rstrip=True),
                                      added("<|system|>", rstrip=True), added("<|end|>", rstrip=True),
                                      added("<|user|>", rstrip=True)]),
    # Mistral v0.3 as transformers converts it now: Metaspace with prepend_scheme "first".
    "mistral-v0.3": dict(byte_level=False, normalizer=None,
                         pre_tokenizer={"type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "first",
                                        "split": False},
                         post_processor=template("<s>"), decoder=SP_DECODER,
                         added=SP_SPECIALS + [added("[INST]"), added("[/INST]")]),
    # Not a family: the remaining normalizers and pre-tokenizers in one byte-level file ...
    "other-byte-level": dict(byte_level=True,
                             normalizer={"type": "Sequence", "normalizers": [
                                 {"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"},
                                 {"type": "Strip", "strip_left": True, "strip_right": True}]},
                             pre_tokenizer=sequence({"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "Isolated"},
                                                    {"type": "Digits", "individual_digits": False}, byte_level(True, False)),
                             post_processor=None, decoder=byte_level(True, True), added=[added("<|endoftext|>")]),
    # ... and in one with byte fallback, plus an added token matched in normalized text.
    "other-byte-fallback": dict(byte_level=False,
                                normalizer={"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
                                pre_tokenizer=sequence({"type": "Whitespace"},
                                                       {"type": "Metaspace", "replacement": METASPACE,
                                                        "prepend_scheme": "always", "split": True}),
                                post_processor=None,
                                decoder={"type": "Sequence", "decoders": [
                                    {"type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "always",
                                     "split": True}, {"type": "ByteFallback"}, {"type": "Fuse"}]},
                                added=SP_SPECIALS + [added("\uff28\uff49!", special=False, normalized=True)]),
}


def build(family: dict, folder: Path) -> Path:
    """Trains the family's tokenizer.json into `folder` with `tokenizers`' BpeTrainer."""
    from tokenizers import AddedToken, Tokenizer, trainers
    from tokenizers.pre_tokenizers import ByteLevel

    spec = {"version": "1.0", "added_tokens": [], "normalizer": family["normalizer"],
            "pre_tokenizer": family["pre_tokenizer"], "post_processor": None, "decoder": family["decoder"],
            "model": {"type": "BPE", "vocab": {}, "merges": []}}
    tokenizer = Tokenizer.from_str(json.dumps(spec))
    if family["byte_level"]:
        trainer = trainers.BpeTrainer(vocab_size=3000, initial_alphabet=ByteLevel.alphabet(), show_progress=False)
    else:
        # The <0xNN> tokens come right after the specials, as in LLaMA-2; few characters of their
        # own, so that many fall back to bytes.
        byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
        trainer = trainers.BpeTrainer(vocab_size=2000, limit_alphabet=200, show_progress=False,
                                      special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens)
    tokenizer.train_from_iterator(training_lines(), trainer)
    for token in family["added"]:
        if tokenizer.token_to_id(token["content"]) is None:
            tokenizer.add_tokens([AddedToken(token["content"], special=token["special"], rstrip=token["rstrip"],
                                             normalized=token["normalized"])])
    file = json.loads(tokenizer.to_str())
    if family["byte_level"]:
        file["model"].update(byte_fallback=False, unk_token=None, fuse_unk=False)
    else:
        file["model"].update(byte_fallback=True, unk_token="<unk>", fuse_unk=True)
        # The trainer made the byte tokens special added tokens; in LLaMA-2 they are plain vocabulary.
        file["added_tokens"] = [t for t in file["added_tokens"] if not t["content"].startswith("<0x")]
    file["model"]["ignore_merges"] = family.get("ignore_merges", False)
    file["post_processor"] = _with_ids(family["post_processor"], file["model"]["vocab"], file["added_tokens"])
    folder.mkdir()
    (folder / "tokenizer.json").write_text(json.dumps(file, ensure_ascii=False))
    return folder


def _with_ids(processor, vocab: dict, added_tokens: list):
    """`processor` with the ids of its template's special tokens filled in."""
    if processor is None:
        return None
    ids = dict(vocab) | {t["content"]: t["id"] for t in added_tokens}
    processor = json.loads(json.dumps(processor))
    for step in processor.get("processors", [processor]):
        for name, token in step.get("special_tokens", {}).items():
            token["ids"] = [ids[name]]
    return processor


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_matches_tokenizers(name, tmp_path):
    from tokenizers import Tokenizer

    family = FAMILIES[name]
    folder = build(family, tmp_path / name)
    hf = Tokenizer.from_file(str(folder / "tokenizer.json"))
    texts = corpus()
    ids_with = [hf.encode(t).ids for t in texts]
    ids_without = [hf.encode(t, add_special_tokens=False).ids for t in texts]
    assert sum(map(len, ids_without)) > sum(map(len, texts)) / 8, "the trained vocabulary is implausibly coarse"
    compare(name, folder, texts, ids_with, ids_without, lambda ids, skip: hf.decode(ids, skip_special_tokens=skip),
            tmp_path)
    if family["byte_level"] and name != "other-byte-level":
        # Byte-level BPE loses nothing but what the normalizer changes.
        expected = [hf.normalizer.normalize_str(t) if hf.normalizer else t for t in texts]
        decoded = run_tool(folder, decode_requests(ids_without, False), tmp_path)
        bad = [(t, d) for t, d, e in zip(texts, decoded, expected) if d != e]
        assert not bad, f"{name}: decode(encode(text)) != text for {len(bad)} strings, e.g. {bad[:3]}"
