"""Documents of English text from Debian packages unpacked with `dpkg-deb -x` (experiments/make_corpus_large.sh),
for experiments/make_corpus_large.py. Each source_* yields (name, text) pairs as make_corpus.py's do:

  source_html_english  HTML manuals: sections through make_corpus.source_html, English prose only
  source_dictd         dictd dictionaries (.index + .dict.dz): entries joined into ~4 KB documents
                       (gcide_clean: GCIDE's pronunciation markup removed)
  source_man           man pages formatted by man-db/groff, one document per page
  source_pod           Perl's POD through pod2text, one document per file
  source_text          plain text manuals (vim's help): paragraphs joined into ~4 KB documents
"""
import gzip
import os
import re
import subprocess
from pathlib import Path

import sys  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # make_corpus.py
from make_corpus import paragraph_chunks, source_html

# A folder that holds another language's copy: "de", "pt_BR", "de-DE", "gnucash-guide-de".
OTHER_LANGUAGE = re.compile(r"(^|-)(ar|ca|cs|da|de|el|es|fa|fi|fr|gl|hr|hu|id|it|ja|ko|lt|nb|nl|nn|pl|pt|ro|ru|sl"
                            r"|sv|tr|uk|vi|zh)([-_][A-Za-z]{2,4})?$")
# Generated pages that only list or repeat other pages (mdBook's print.html is the whole book again).
INDEX_PAGES = re.compile(r"^(genindex.*|search|py-modindex|np-modindex|print|all|index-all|allclasses.*|"
                         r"allpackages.*|overview-tree|package-tree|deprecated-list)\.html?$")
STOPWORDS = set("the of and to a in is that for it as with be on by this are or an not from at which can if "
                "you will".split())


def english_share(text):
    """Share of the text's words that are common English function words: ~0.3 in prose, < 0.1 in
    code, tables, lists of names, or another language."""
    return sum(w.lower() in STOPWORDS for w in re.findall(r"[A-Za-z]+", text)) / max(1, len(text.split()))


def html_files(root, skip_parts=()):
    """HTML pages under root, without other languages' copies, Sphinx's _sources/_static/_modules,
    index pages, and folders named in skip_parts (e.g. rustdoc's "src": highlighted source code)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not (d.startswith(("_", ".")) or OTHER_LANGUAGE.search(d)
                                                         or d in skip_parts))
        out += [Path(dirpath, f) for f in sorted(filenames)
                if f.endswith((".html", ".htm")) and not INDEX_PAGES.match(f) and f not in skip_parts]
    return out


def source_html_english(files, min_share=0.12):
    for name, text in source_html("", files):
        if english_share(text) >= min_share:
            yield name, text


def dictd_entries(index_path, dict_path):
    """Each entry once (several headwords may share one), in file order, without the 00-database-* notes."""
    b64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}

    def number(s):
        n = 0
        for c in s:
            n = n * 64 + b64[c]
        return n

    spans = set()
    for line in Path(index_path).read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and not parts[0].startswith("00-database") and not parts[0].startswith("00database"):
            spans.add((number(parts[1]), number(parts[2])))
    data = gzip.open(dict_path).read()
    for start, length in sorted(spans):
        yield re.sub(r"(?m)^[ \t]+", "", data[start:start + length].decode("utf-8", errors="replace")).strip()


def gcide_clean(entry):
    """A GCIDE entry without its syllabified headword and pronunciation ('Abaca \\Ab"a*ca\\ ([a^]b"[.a]*k[.a]),'
    becomes 'Abaca,') and without the lines naming its source ('[1913 Webster]'): markup no prose has."""
    entry = re.sub(r" \\[^\\\n]*\\(?: \([^()\n]*\))?", "", entry)
    return re.sub(r"(?m)^\[[^\]\n]{1,40}\]\n?", "", entry).strip()


def source_dictd(index_path, dict_path, clean=str.strip, chunk=4096):
    entries = (clean(e) for e in dictd_entries(index_path, dict_path))
    yield from paragraph_chunks((e for e in entries if e), chunk)


def man_text(path):
    """A man page as text: paragraphs unwrapped (MANWIDTH), no hyphenation, without man's 7-space margin,
    its header and footer lines ("ls(1)   User Commands   ls(1)") and the rules of its tables."""
    env = dict(os.environ, MANWIDTH="2000", MANROFFOPT="-rHY=0", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    out = subprocess.run(["man", "-l", str(path)], env=env, capture_output=True, text=True, errors="replace").stdout
    lines = [line.rstrip() for line in out.strip().splitlines()[1:-1] if not re.fullmatch(r"\s*[─═-]{8,}\s*", line)]
    text = re.sub(r" {20,}", "   ", re.sub(r"(?m)^ {20,}", "", "\n".join(lines)))  # tbl centers tables in MANWIDTH
    return re.sub(r"(?m)^ {1,7}", "", text).strip()


def is_man_link(path):
    """A page that is only `.so other-page` (man-db follows it, so its text is another page's)."""
    with gzip.open(path, "rt", errors="replace") if str(path).endswith(".gz") else open(path, errors="replace") as f:
        return f.read(4096).lstrip().startswith(".so ")


def source_man(files):
    for f in files:
        if not is_man_link(f):
            yield Path(f).name, man_text(f)


def source_pod(files):
    for f in files:
        out = subprocess.run(["pod2text", "-w", "2000", str(f)], capture_output=True, text=True, errors="replace")
        yield Path(f).name, re.sub(r"(?m)^ {1,4}", "", out.stdout).strip()


def source_text(files, chunk=4096):
    """Paragraphs of plain text files, rules (lines of === or ---) left out."""
    for f in files:
        text = Path(f).read_text(encoding="utf-8", errors="replace")
        paragraphs = (p.strip("\n") for p in re.split(r"\n\s*\n", re.sub(r"(?m)^[=\-*]{8,}$", "", text)))
        for name, doc in paragraph_chunks((p for p in paragraphs if p.strip()), chunk):
            yield f"{Path(f).name}#{name}", doc
