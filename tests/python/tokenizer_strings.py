"""Hard strings for tokenizer parity tests: one list for every tokenizer we compare with HF's.

- FIXED: mixed scripts, whitespace runs, emoji, code, contractions, special-token look-alikes.
- UNICODE: text whose ids depend on Unicode handling: composed and decomposed forms, ligatures,
  full-width and other compatibility characters, Hangul syllables and jamo, marks that canonical
  ordering moves, case mappings with traps (İ, final sigma), digits and punctuation of many
  scripts, RTL text and bidi controls, control characters, and the special tokens of the families
  tests/python/test_tokenizer_families.py builds.
- corpus(): FIXED + UNICODE + 60 seeded random strings (any assigned code point) + 20 seeded
  concatenations; the same list on every call.
"""

import random
import unicodedata

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


UNICODE = [
    # composed / decomposed / compatibility forms
    "e\u0301", "\u00e9", "A\u030a \u00c5 \u212b", "\u1e9b\u0323", "o\u0308\u0304 \u022b", "a\u0323\u0302 a\u0302\u0323 \u1ead",
    "Ti\u00ea\u0301ng Vi\u00ea\u0323t", "Tie\u0302\u0301ng Vie\u0323\u0302t", "\u2126 \u212a \u00c5ngstr\u00f6m", "\u01c4 \u01c5 \u01c6 \u01f1",
    "q\u0307\u0323 q\u0323\u0307", "\u0958\u0915\u093c", "\u0e33 \u0eb3 \u0f77", "\u1100\u1161\u11a8 \uac01 \u1112\u1161\u11ab\uad6d\uc5b4",
    "\u3131\u314f \u3164", "\uf900\uf901 \u2f00\u2f01 \u2e9f", "\U0002f800 \U00020000\U0002a700",
    # ligatures, full-width, half-width, enclosed, super/subscripts, symbols
    "\ufb01nance \ufb02ow \ufb00 \ufb03 \ufb04 \ufb05 \u00e6 \u0153 \u0132", "\uff21\uff22\uff23\uff11\uff12\uff13\uff01\uff1f\uff08\uff09",
    "\uff76\uff80\uff76\uff85\uff9e", "\u2460\u2461\u2462 \u24b6 \u3251", "\u2153 \u00bd x\u00b2 H\u2082O 10\u207b\u00b3",
    "\u2122 \u2103 \u338f \u337b \u2026 \u2025", "\U0001d400\U0001d401 \U0001d49c\U0001d4b7 \U0001d7d9\U0001d7da",
    # case mappings
    "\u0130stanbul \u0130I\u0131i", "\u03a3\u0391\u03a3 \u039f\u0394\u039f\u03a3 \u03c3\u03c2", "STRASSE \u1e9e \u00df",
    "\u0386\u0388\u0389 \u0390\u03b0", "\u0400\u0401\u040e \u0531\u0532 \u10a0\u10a1 \u13a0\u13a1", "\U00010400\U00010401 \U0001e900",
    # digits and numbers of many scripts
    "\u0660\u0661\u0662\u0663 \u06f4\u06f5 \u0966\u0967\u0968 \u0e51\u0e52 \u1040\u1041", "\u2160\u2161\u216b \u3007\u3021",
    "1,234,567.89 -0.5e+10 0b1010 0o17 1_000_000", "123456789012345678901234567890", "\u0663.\u0661\u0664 \uff19\uff19%", "v1.2.3-rc.4+build.5",
    # punctuation of many kinds
    "\u00abquotes\u00bb \u201eGerman\u201c \u2039single\u203a", "em\u2014dash en\u2013dash hy-phen \u2212minus", "\u00bfQu\u00e9? \u00a1S\u00ed!",
    "\u3001\u3002\u300c\u300d\u300e\u300f\u3010\u3011", "\u00a7\u00b6\u2020\u2021\u2022\u2030", "\u061f\u060c\u061b \u066a", "a\u2026b...c\u2025d",
    "\u166d \u2e3a\u2e3b \u2e43 \U000111c9", "$+<=>^`|~ \u00a2\u00a3\u00a5\u20ac",
    # whitespace of every kind, tabs and newlines
    "\u2000\u2001\u2002\u2003 x \u2009\u200a", "\u205f\u3000\u00a0\u202f\u1680 y", "\u180e\u200b\u2060 z", "\t\t\tx\t", "a\r\rb\r",
    " \n \n ", "line1\nline2\r\n\tindent\n\n", "\x0b\x0c\x1c\x1d\x1e\x1f", "   \t\n  \u3000 ",
    # RTL and bidi
    "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd", "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd", "\u0645\u064e\u0631\u0652\u062d\u064e\u0628\u064b\u0627",
    "\ufefb \ufef5 \ufdfa \ufdf2", "\u200fRTL mark \u200e \u202eoverride\u202c \u2067isolate\u2069", "English \u0639\u0631\u0628\u064a \u05e2\u05d1\u05e8\u05d9\u05ea mixed",
    # emoji
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466", "\U0001f3f3\ufe0f\u200d\U0001f308 \U0001f3f4\u200d\u2620\ufe0f", "\U0001f44d\U0001f3ff\U0001f44d\U0001f3fb",
    "\U0001f1ef\U0001f1f5\U0001f1fa\U0001f1f8", "1\ufe0f\u20e3 #\ufe0f\u20e3", "\u2764\ufe0f\u200d\U0001f525 \U0001f9d1\U0001f3fd\u200d\U0001f680", "\U0001f600\u0301",
    # control characters and invisibles
    "\x00", "\x07bell\x08", "\x1b[31mred\x1b[0m", "\x7f\x80\x9f", "soft\u00adhyphen", "\ufeffBOM", "\ufffd replacement \ufffc", "\U000e0001\U000e0041",
    # code
    '{"key": [1, 2.5, null], "s": "a\\"b"}', r"^(?:\d{3}-)?\w+@[a-z]+\.(com|org)$", "for i in $(seq 1 10); do echo \"$i\" >> out.txt; done",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;", "<div class=\"x\">&amp; &lt;tag&gt; &#x1F600;</div>", "x  =  1\t\t# comment\r\n",
    "fn main() {\n\tlet v: Vec<u8> = vec![0xFF; 3];\n}\n", "    return {k: v for k, v in d.items() if v is not None}",
    # special tokens of the families (inside text, repeated, with spaces around)
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>", "text<|endoftext|>more", "<think>\nhmm\n</think>\n\nanswer",
    "[INST] hi [/INST]", "<s>[INST] What? [/INST]</s>", "<|user|>\nhello<|end|>\n<|assistant|>\n", "<|system|> sys <|end|> <|user|>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>", "<|im_start|><|im_start|> <|im_end|>", "<|im_start", "<|endoftext|>\u0301",
]


def random_char(rng: random.Random) -> str:
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
    texts = FIXED + UNICODE
    for _ in range(60):
        texts.append("".join(random_char(rng) for _ in range(rng.randrange(1, 400))))
    for _ in range(20):
        texts.append("".join(rng.choice(FIXED[:60]) + rng.choice(["", " ", "\n"]) for _ in range(rng.randrange(2, 8))))
    return texts
