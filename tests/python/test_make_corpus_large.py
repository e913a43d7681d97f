"""experiments/make_corpus_large.py and its helpers (corpus_debian.py, corpus_dedup.py,
corpus_decontaminate.py) on tiny synthetic package trees, no network: which HTML pages are read,
dictd entries, paragraph deduplication up to numbers and case, the 13-word test-overlap filter, and a
whole run whose test sources end up in heldout.jsonl only, as scripts/corpus_split.py reads them."""
import gzip
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
sys.path.insert(0, str(ROOT / "scripts"))
import corpus_debian  # noqa: E402
from corpus_decontaminate import Decontaminator  # noqa: E402
from corpus_dedup import ParagraphDedup  # noqa: E402
import make_corpus_large  # noqa: E402

sys.path.insert(0, str(ROOT / "tests" / "python"))
from script_tool import script_run  # noqa: E402

WORDS = ("the river is a long way from the stone and it can be seen in the light of that old paper window "
         "by which an engine for this garden will turn").split()


def prose(rng, n_words):
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "."


def page(*paragraphs):
    return "<html><head><title>t</title></head><body><h1>Title</h1>" + "".join(
        f"<p>{p}</p>" for p in paragraphs) + "</body></html>"


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def b64(n):
    digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out = ""
    while True:
        out, n = digits[n % 64] + out, n // 64
        if not n:
            return out


def dictd(folder, name, entries):
    """A dictd dictionary: entries (headwords, text), and a 00-database-info note first."""
    data, index = b"", []
    for heads, text in [(["00-database-info"], "built by a test")] + entries:
        raw = (text + "\n\n").encode()
        index += [f"{h}\t{b64(len(data))}\t{b64(len(raw))}" for h in heads]
        data += raw
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.index").write_text("\n".join(sorted(index)) + "\n")
    with gzip.open(folder / f"{name}.dict.dz", "wb") as f:
        f.write(data)


def test_html_files_skip_other_languages_sources_index_pages_and_named_folders(tmp_path):
    for rel in ["en/guide.html", "en/_sources/guide.txt.html", "de/guide.html", "gnucash-guide-de/a.html",
                "pt_BR/b.html", "help/C/c.html", "genindex.html", "book/print.html", "src/lib.rs.html",
                "api/x.htm", "notes.txt"]:
        write(tmp_path / rel, page("x"))
    got = {str(p.relative_to(tmp_path)) for p in corpus_debian.html_files(tmp_path, ("src",))}
    assert got == {"en/guide.html", "help/C/c.html", "api/x.htm"}


def test_english_sections_are_kept_and_code_listings_dropped(tmp_path):
    rng = random.Random(5)
    text = " ".join(prose(rng, rng.randint(12, 30)) for _ in range(8))
    code = "\n".join(f"x{i} = foo(y{i}, z[{i}]); bar->baz({i});" for i in range(40))
    write(tmp_path / "a.html", page(text) + "<h2>Listing</h2><pre>" + code + "</pre>")
    docs = [t for _, t in corpus_debian.source_html_english([tmp_path / "a.html"])]
    assert docs == [f"Title\n\n{text}"]


def test_dictd_entries_come_once_each_without_database_notes(tmp_path):
    dictd(tmp_path, "d", [(["colour", "color"], "colour\n   A hue of light."), (["zebra"], "zebra\n   A striped horse.")])
    entries = list(corpus_debian.dictd_entries(tmp_path / "d.index", tmp_path / "d.dict.dz"))
    assert entries == ["colour\nA hue of light.", "zebra\nA striped horse."]


def test_dedup_drops_repeats_up_to_numbers_case_and_spacing():
    rng = random.Random(11)
    shared = [prose(rng, 20) for _ in range(3)]
    dedup = ParagraphDedup(min_bytes=100)
    first = "\n\n".join(shared + ["Returns the length of Vec<u8> in bytes."])
    assert dedup.filter(first) == first
    fresh = prose(rng, 40)
    second = "\n\n".join([shared[0].upper(), fresh, "Returns  the length of Vec<u16> in bytes.", "Examples"])
    assert dedup.filter(second) == fresh + "\n\nExamples"  # short paragraphs ("Examples") always stay
    assert dedup.filter(first) is None                      # an exact duplicate document
    assert dedup.filter("A short cookie.") == "A short cookie."
    assert dedup.paragraphs_dropped == 2 + 4


def test_paragraphs_sharing_13_words_with_a_test_text_are_dropped():
    rng = random.Random(3)
    words = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(30)]  # waa wab ...: distinct words
    guard = Decontaminator([" ".join(words)])
    clean = prose(rng, 30)
    twelve, thirteen = " ".join(words[5:17]), " ".join(words[5:18])
    assert guard.filter(f"{clean}\n\nsee {twelve} here") == f"{clean}\n\nsee {twelve} here"
    assert guard.filter(f"{clean}\n\nSee {thirteen.upper()}, here") == clean
    assert guard.filter(f"quote: {thirteen}") is None
    split = f"{clean}\n\n{' '.join(words[5:11])}\n\n{' '.join(words[11:18])}\n\n{clean}"
    assert guard.filter(split) == f"{clean}\n\n{clean}"  # a run across two short paragraphs
    assert guard.paragraphs_dropped == 4


def test_a_run_keeps_test_sources_out_of_train_and_each_paragraph_once(tmp_path):
    rng = random.Random(7)
    base, pkgs, out = tmp_path / "base", tmp_path / "pkgs", tmp_path / "out"
    jargon = [prose(rng, 60) for _ in range(4)]
    base_train = [{"text": jargon[0], "source": "jargon"}, {"text": prose(rng, 50), "source": "gnu-standards"},
                  {"text": prose(rng, 50), "source": "bible-kjv"}, {"text": "A short fortune.", "source": "fortunes"}]
    base_held = [{"text": jargon[1], "source": "jargon"}, {"text": prose(rng, 50), "source": "bible-kjv"}]
    write(base / "train.jsonl", "".join(json.dumps(d) + "\n" for d in base_train))
    write(base / "heldout.jsonl", "".join(json.dumps(d) + "\n" for d in base_held))
    shared = [prose(rng, 40) for _ in range(3)]
    quote = " ".join(jargon[0].split()[10:30])
    write(pkgs / "linux-doc-6.1/usr/share/doc/linux-doc-6.1/html/a.html", page(*shared, quote))
    write(pkgs / "postgresql-doc-15/usr/share/doc/postgresql-doc-15/html/b.html", page(*shared, prose(rng, 60)))
    for name, (package, _) in make_corpus_large.DICTIONARIES.items():
        dictd(pkgs / package / "usr/share/dictd", name, [([f"{name}{i}"], prose(rng, 30)) for i in range(5)])
    r = script_run("experiments/make_corpus_large.py", base, pkgs, out)
    assert r.returncode == 0, r.stderr
    train = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    held = [json.loads(line) for line in (out / "heldout.jsonl").read_text().splitlines()]
    assert {d["source"] for d in train} >= {"bible-kjv", "fortunes", "linux-doc", "postgresql-doc", "gcide"}
    assert not {d["source"] for d in train} & {"jargon", "gnu-standards"}
    assert {d["text"] for d in held if d["source"] == "jargon"} == set(jargon[:2])
    paragraphs = [p for d in train + held if d["source"] not in {"jargon", "gnu-standards"}
                  for p in d["text"].split("\n\n")]
    assert all(paragraphs.count(s) == 1 for s in shared)
    assert not any(quote in p for p in paragraphs)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["dropped_paragraphs"]["test_overlap"] == 1
    assert manifest["totals"]["train_documents"] == len(train)
    split = tmp_path / "split"
    r = script_run("scripts/corpus_split.py", out, split)
    assert r.returncode == 0, r.stderr
    test = [json.loads(line) for line in (split / "test.jsonl").read_text().splitlines()]
    assert {d["source"] for d in test} == {"jargon", "gnu-standards"}
