"""Our tokenizers (driven through <build>/tests/io/tokenizer_tool) against the references.

- tokenizer.json: ids and decoded text against PyPI `tokenizers` on the real LLaMA-2 and LLaMA-3
  vocabularies (../shared/fixtures/tokenizers/, skipped when absent) and on variants of them
  (Metaspace pre-tokenizer with each prepend scheme, merges as pairs, a BOS/EOS template, added
  tokens with lstrip/rstrip/single_word/normalized); BOS/EOS handling and full ids against
  transformers' AutoTokenizer.
- tokenizer.model: a tiny SentencePiece BPE model trained here against Python `sentencepiece`.
"""

import copy
import json
import os
import random
import subprocess
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(os.environ.get("LINEAR_ARD_TOKENIZER_FIXTURES", ROOT.parent / "shared" / "fixtures" / "tokenizers"))


def _tool() -> Path:
    build = os.environ.get("LINEAR_ARD_BUILD_DIR")
    if not build:
        pytest.skip("LINEAR_ARD_BUILD_DIR is not set (scripts/test.sh sets it to the build folder)")
    tool = Path(build) / "tests" / "io" / "tokenizer_tool"
    if not tool.exists():
        pytest.fail(f"{tool} is missing: build the target tokenizer_tool")
    return tool


def _fixture(name: str) -> Path:
    folder = FIXTURES / name
    if not (folder / "tokenizer.json").exists():
        pytest.skip(f"real tokenizer files not found at {folder} (they live outside the repository)")
    return folder


def run_tool(folder: Path, requests: list, tmp_path: Path) -> list:
    """One tool run for many requests: {"text", "add_special_tokens"} encodes (reply: ids or the
    error message), {"ids", "skip_special_tokens"} decodes (reply: text)."""
    src, dst = tmp_path / "requests.jsonl", tmp_path / "replies.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in requests))
    subprocess.run([str(_tool()), str(folder), "batch", str(src), str(dst)], check=True)
    # Only "\n" ends a line: texts may hold U+2028 and friends, which str.splitlines also splits at.
    replies = [json.loads(line) for line in dst.read_text().split("\n") if line]
    assert len(replies) == len(requests)
    return [r["ids"] if "ids" in r else r["text"] if "text" in r else "ERROR: " + r["error"] for r in replies]


def encode_requests(texts, add_special_tokens):
    return [{"text": t, "add_special_tokens": add_special_tokens} for t in texts]


def decode_requests(id_lists, skip_special_tokens):
    return [{"ids": i, "skip_special_tokens": skip_special_tokens} for i in id_lists]


def assert_same(what, texts, ours, theirs):
    bad = [(t, o, h) for t, o, h in zip(texts, ours, theirs) if o != h]
    report = "\n".join(f"  {t!r}\n    ours: {o}\n    HF:   {h}" for t, o, h in bad[:5])
    assert not bad, f"{what}: {len(bad)} of {len(texts)} strings differ, first ones:\n{report}"


def compare(what, folder, texts, ids_with, ids_without, decode, tmp_path):
    """Checks in one tool run our ids with and without special tokens against `ids_with` and
    `ids_without`, and our decoding of `ids_with` against decode(ids, skip_special_tokens)."""
    n = len(texts)
    requests = encode_requests(texts, True) + encode_requests(texts, False)
    requests += decode_requests(ids_with, False) + decode_requests(ids_with, True)
    ours = run_tool(folder, requests, tmp_path)
    assert_same(f"{what} ids", texts, ours[:n], ids_with)
    assert_same(f"{what} ids without special tokens", texts, ours[n:2 * n], ids_without)
    for k, skip in ((2, False), (3, True)):
        assert_same(f"{what} decode(skip_special_tokens={skip})", texts, ours[k * n:(k + 1) * n],
                    [decode(i, skip) for i in ids_with])


# ---------------------------------------------------------------------------------------------
# The corpus

FIXED = [
    "", " ", "  ", "\t", "\n", "\r\n", "a", "A", "é", "中", "😀", "0", "!", "'", "▁", "  leading", "trailing  ",
    "Hello world", "Hello, World! How are you?", " Hello", "Hello ", "hello\nworld", "hello\r\nworld\r\n",
    "tab\tseparated\tvalues", "multiple   spaces    here", "\n\n\nnewlines\n\n", " \t \n mixed \u00a0\u3000 ws \u2028x\u0085y",
    "Café naïve façade résumé coöperate Ångström", "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Γειά σου Κόσμε, αβγδεζηθ ΑΒΓΔ", "你好，世界！这是一个测试。中文分词很难。", "日本語のテキストとカタカナ、ひらがな。",
    "한국어 텍스트도 있습니다.", "مرحبا بالعالم، هذا اختبار.", "नमस्ते दुनिया, यह एक परीक्षण है।", "สวัสดีชาวโลก นี่คือการทดสอบ",
    "1234567890", "3.14159265358979323846", "12,345,678.90", "year 2024, 1st of 10000000 items", "0x1F600 1e-9 -42",
    "😀😃😄 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 👩🏿‍💻 ❤️", "I'm you're he's we've they'll I'd it's", "I’M YOU’RE HE’S WE’VE THEY’LL",
    "IT'S WE'LL THEY'D I'M YOU'VE SHE'S", "don't DON'T Don'T", "'s 'S 'll 'LL 'ſ",
    "def f(x):\n    return x * 2\n\n\nclass A:\n\tpass\n",
    "#include <vector>\nint main() {\n    std::vector<int> v{1, 2, 3};\n    for (auto& x : v) { x += 1; }\n    return 0;\n}\n",
    "if (a && b || !c) { printf(\"%d\\n\", a); }", "    indented with four\n        and eight", "a=1;b=2;;c==3",
    "<s>", "</s>", "<unk>", "<s>hello</s>", "text <s> inside </s> text", "<s> leading space after special",
    "<|begin_of_text|>", "<|begin_of_text|>Hello<|end_of_text|>", "a<|end_of_text|>b", " <|begin_of_text|> x",
    "<|reserved_special_token_5|><|eot_id|>", "<|begin_of_text", "<<s>>", "<0x41>", "<0xZZ>",
    "\u200b\u200d\ufeff zero width", "e\u0301 combining", "ﬁ ligature ℌ ⅷ ½ ²", "\x00\x01\x1f control \x7f",
    "https://example.com/path?q=1&r=two#frag", "email@example.org", "ALL CAPS SENTENCE HERE",
    "x" * 300, "ab" * 200, " " * 50 + "end", "😀" * 40, "中文" * 100,
]


def _random_char(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.35:
        return rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    if roll < 0.55:
        return rng.choice(" \t\n\r\u00a0\u3000\u2028\u0085.,;:!?'\"()[]{}<>-_/\\|@#$%^&*+=~`’“”")
    while True:
        # Any assigned code point; Python 3.11's Unicode 14 is the version PCRE2 10.42 and HF's
        # Oniguruma agree on, so category tables match.
        cp = rng.choice([rng.randrange(0x80, 0x3000), rng.randrange(0x3000, 0x10000), rng.randrange(0x10000, 0x20000)])
        if unicodedata.category(chr(cp)) not in ("Cn", "Cs", "Co"):
            return chr(cp)


def corpus() -> list:
    rng = random.Random(20240607)
    texts = list(FIXED)
    for _ in range(60):
        texts.append("".join(_random_char(rng) for _ in range(rng.randrange(1, 400))))
    for _ in range(20):
        texts.append("".join(rng.choice(FIXED[:60]) + rng.choice(["", " ", "\n"]) for _ in range(rng.randrange(2, 8))))
    return texts


# ---------------------------------------------------------------------------------------------
# tokenizer.json against `tokenizers`


def check_against_tokenizers(folder: Path, texts: list, tmp_path: Path):
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(folder / "tokenizer.json"))
    compare(folder.name, folder, texts, [hf.encode(t).ids for t in texts],
            [hf.encode(t, add_special_tokens=False).ids for t in texts],
            lambda ids, skip: hf.decode(ids, skip_special_tokens=skip), tmp_path)


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
    info = json.loads(subprocess.run([str(_tool()), str(folder), "info"], check=True, capture_output=True, text=True).stdout)
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
    out = subprocess.run([str(_tool()), str(folder), "time", str(path), "2"], check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    print(f"{name}: {result}")
    # Generous bound for shared CI machines; docs/tokenizers.md has measured numbers.
    assert result["seconds"] < 5.0
