"""Each tokenizer.json pipeline stage of ours (normalizers, pre-tokenizers, decoders), built from a
spec, against the same spec in PyPI `tokenizers`, through `tokenizer_tool components`.

The Unicode-dependent stages run on every code point (in contexts that make decomposition,
canonical ordering and composition show) besides the hard strings of tokenizer_strings.py.
Where HF's answer comes from Rust's standard library or its regex crate (Lowercase, Digits,
Whitespace; Unicode 16) rather than its own pinned tables (Unicode 9.0 normalization and marks,
8.0 punctuation, which we reproduce for every code point), the code points are those assigned in
Python's Unicode 14.0: utf8proc 2.8 (15.0) and PCRE2 10.42 (14.0) cannot know later ones.
"""

import json
import random
import sys
import unicodedata

import pytest
from tokenizer_strings import corpus
from tokenizer_tool import assert_same, run_components

SCALARS = [cp for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF]
ASSIGNED_14 = [cp for cp in SCALARS if unicodedata.category(chr(cp)) != "Cn"]


def hf_component(kind: str, spec):
    """The `kind` stage ("normalizer", "pre_tokenizer", "decoder") HF builds from `spec`."""
    from tokenizers import Tokenizer

    file = {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": None, "post_processor": None,
            "decoder": None, "model": {"type": "BPE", "vocab": {}, "merges": []}}
    file[kind] = spec
    return getattr(Tokenizer.from_str(json.dumps(file)), kind)


def chunked(code_points, context, size=4096):
    """Texts of `size` code points each, every code point c written as context(chr(c))."""
    return ["".join(context(chr(c)) for c in code_points[i:i + size]) for i in range(0, len(code_points), size)]


# Contexts that make a code point's Unicode properties matter: neighbours of its own kind, a
# following ccc-1 mark (canonical ordering moves any mark of class > 1 after it), a following
# acute (composition with it as starter), and Hangul L + it + T (conjoining jamo composition).
NORMALIZER_CONTEXTS = {
    "alone": lambda c: c,
    "before-overlay": lambda c: "a" + c + "\u0334 ",
    "before-acute": lambda c: c + "\u0301 ",
    "in-hangul": lambda c: "\u1100" + c + "\u11a8 ",
}


def check_normalizer(spec, texts, tmp_path, what):
    hf = hf_component("normalizer", spec)
    ours = run_components([{"normalizer": spec, "text": t} for t in texts], tmp_path)
    assert_same(f"normalizer {json.dumps(spec)} {what}", texts, ours, [hf.normalize_str(t) for t in texts])


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_unicode_forms_every_code_point(form, tmp_path):
    texts = [t for context in NORMALIZER_CONTEXTS.values() for t in chunked(SCALARS, context)]
    check_normalizer({"type": form}, texts, tmp_path, "on every code point")


def test_strip_accents_every_code_point(tmp_path):
    check_normalizer({"type": "StripAccents"}, chunked(SCALARS, lambda c: "a" + c), tmp_path, "on every code point")


def test_lowercase_every_assigned_code_point(tmp_path):
    check_normalizer({"type": "Lowercase"}, chunked(ASSIGNED_14, lambda c: c + " "), tmp_path, "on every code point")


NORMALIZERS = [
    {"type": "NFC"}, {"type": "NFD"}, {"type": "NFKC"}, {"type": "NFKD"}, {"type": "Lowercase"}, {"type": "StripAccents"},
] + [{"type": "Strip", "strip_left": left, "strip_right": right} for left in (True, False) for right in (True, False)] + [
    {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "StripAccents"}, {"type": "Lowercase"}]},
    {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Strip", "strip_left": True, "strip_right": True},
                                         {"type": "Prepend", "prepend": "\u2581"},
                                         {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
]


@pytest.mark.parametrize("index", range(len(NORMALIZERS)))
def test_normalizer_hard_strings(index, tmp_path):
    check_normalizer(NORMALIZERS[index], corpus(), tmp_path, "on the hard strings")


# ---------------------------------------------------------------------------------------------
# Pre-tokenizers


def check_pre_tokenizer(spec, texts, tmp_path, what):
    hf = hf_component("pre_tokenizer", spec)
    ours = run_components([{"pre_tokenizer": spec, "text": t} for t in texts], tmp_path)
    theirs = [[piece for piece, _ in hf.pre_tokenize_str(t)] for t in texts]
    assert_same(f"pre_tokenizer {json.dumps(spec)} {what}", texts, ours, theirs)


CHAR_CLASS_PRE_TOKENIZERS = [
    {"type": "Digits", "individual_digits": True}, {"type": "Digits", "individual_digits": False},
    {"type": "Punctuation", "behavior": "Isolated"}, {"type": "Whitespace"}, {"type": "WhitespaceSplit"},
]


@pytest.mark.parametrize("index", range(len(CHAR_CLASS_PRE_TOKENIZERS)))
def test_character_class_pre_tokenizers_every_assigned_code_point(index, tmp_path):
    # Doubled, between letters and beside a digit, a space and a '!', so that each class shows.
    texts = chunked(ASSIGNED_14, lambda c: "a" + c + c + "b1" + c + " !" + c)
    check_pre_tokenizer(CHAR_CLASS_PRE_TOKENIZERS[index], texts, tmp_path, "on every code point")


BEHAVIORS = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]
# Qwen2's and LLaMA-3's split patterns (as their tokenizer.json files spell them).
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
                 r"|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_level(add_prefix_space, use_regex):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True, "use_regex": use_regex}


PRE_TOKENIZERS = (
    [{"type": "Split", "pattern": pattern, "behavior": b, "invert": invert}
     for pattern in ({"String": " "}, {"Regex": r"\p{N}+|[,.]"}) for b in BEHAVIORS for invert in (False, True)]
    + [{"type": "Punctuation", "behavior": b} for b in BEHAVIORS]
    + CHAR_CLASS_PRE_TOKENIZERS
    + [{"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": s, "split": split}
       for s in ("always", "first", "never") for split in (False, True)]
    + [byte_level(a, r) for a in (False, True) for r in (False, True)]
    + [{"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": p}, "behavior": "Isolated",
                                              "invert": False}, byte_level(False, False)]}
       for p in (QWEN2_PATTERN, LLAMA3_PATTERN)]
    + [{"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, byte_level(False, True)]},
       {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {"type": "Punctuation", "behavior": "Isolated"},
                                              {"type": "Digits", "individual_digits": False}]}]
)


@pytest.mark.parametrize("index", range(len(PRE_TOKENIZERS)))
def test_pre_tokenizer_hard_strings(index, tmp_path):
    check_pre_tokenizer(PRE_TOKENIZERS[index], corpus(), tmp_path, "on the hard strings")


# ---------------------------------------------------------------------------------------------
# Decoders


def token_lists() -> list:
    """Token strings cut at random from the hard strings, spaces as '▁', some characters as
    <0xNN> byte tokens (a few runs cut short, so not valid UTF-8), and the same texts as
    byte-level tokens (HF's ByteLevel encoding) cut anywhere, mid-character too."""
    from tokenizers.pre_tokenizers import ByteLevel

    rng = random.Random(11)
    to_bytes = ByteLevel(add_prefix_space=False, use_regex=False)
    lists = []
    for text in corpus():
        tokens, pos, spaced = [], 0, text.replace(" ", "\u2581")
        while pos < len(spaced):
            n = rng.randrange(1, 5)
            piece = spaced[pos:pos + n]
            if rng.random() < 0.25:
                raw = piece.encode()
                tokens += [f"<0x{b:02X}>" for b in (raw[:-1] if rng.random() < 0.2 and len(raw) > 1 else raw)]
            else:
                tokens.append(piece)
            pos += n
        lists.append(tokens)
        encoded = "".join(piece for piece, _ in to_bytes.pre_tokenize_str(text))
        if encoded:
            cuts = sorted(rng.sample(range(1, len(encoded)), min(len(encoded) - 1, rng.randrange(0, 8))))
            lists.append([encoded[a:b] for a, b in zip([0] + cuts, cuts + [len(encoded)])])
    return lists


DECODERS = (
    [{"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
     {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
     # HF panics where `stop` passes a token's start or the two cuts cross, so `stop` only with
     # `start` 0 (no token list here holds an empty token).
     {"type": "Strip", "content": " ", "start": 1, "stop": 0}, {"type": "Strip", "content": "\u2581", "start": 2, "stop": 0},
     {"type": "Strip", "content": "\u2581", "start": 0, "stop": 1}]
    + [{"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": s, "split": True} for s in ("always", "first", "never")]
    + [{"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                         {"type": "ByteFallback"}, {"type": "Fuse"},
                                         {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
       {"type": "Sequence", "decoders": [{"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                                          "split": False}, {"type": "ByteFallback"}, {"type": "Fuse"}]}]
)


@pytest.mark.parametrize("index", range(len(DECODERS)))
def test_decoder(index, tmp_path):
    spec = DECODERS[index]
    hf = hf_component("decoder", spec)
    lists = token_lists()
    ours = run_components([{"decoder": spec, "tokens": tokens} for tokens in lists], tmp_path)
    assert_same(f"decoder {json.dumps(spec)}", lists, ours, [hf.decode(tokens) for tokens in lists])
