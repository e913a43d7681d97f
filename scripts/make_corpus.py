#!/usr/bin/env python3
"""Builds the English pretraining corpus from text that Debian packages install (scripts/make_corpus.sh
installs them first), and splits it BY DOCUMENT into train / held-out JSONL ({"text": ..., "source": ...} per line).

    scripts/make_corpus.py OUT_DIR [--heldout-permille 30] [--demo-bytes 131072]

Sources (package: what one document is):
  bible-kjv-text (+ bible-kjv, its reader): one chapter of the King James Version
  python3.11-doc, debian-reference-en, debian-faq, developers-reference, gnu-standards:
      one section (text between h1/h2/h3 headings) of an HTML page, extracted with html.parser
  jargon-text: about 4 KB of consecutive paragraphs of the Jargon File
  fortunes: one fortune cookie
A document is held out when sha256("<source>/<name>") mod 1000 < --heldout-permille, so the split
depends on nothing but the documents' names: deterministic and stable when sources are added.
Documents keep their package order; the train file interleaves sources round-robin (one document of
each in turn) so that any prefix of it is a mixture.

Also writes OUT_DIR/demo/{restore,heldout}.jsonl: whole KJV chapters (public domain) from the train
and held-out splits, about --demo-bytes each, for the README demo (data/demo/ holds a copy), and
OUT_DIR/manifest.json with per-source document and byte counts. Python standard library only.
"""

import argparse
import gzip
import hashlib
import html.parser
import json
import re
import subprocess
import sys
from pathlib import Path

VERSION = 2  # bump when extraction changes, so scripts/make_corpus.sh rebuilds a cached corpus

BLOCK_TAGS = {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "pre", "table", "tr", "td", "th", "br",
              "blockquote", "section", "article", "h4", "h5", "h6", "hr", "tbody", "thead", "figure"}
HEADING_TAGS = {"h1", "h2", "h3"}
SKIP_TAGS = {"script", "style", "head", "title", "nav", "footer", "noscript", "svg"}
# Sphinx/DocBook navigation that repeats on every page and is no prose.
SKIP_CLASSES = {"sphinxsidebar", "related", "footer", "navheader", "navfooter", "toc", "headerlink",
                "highlight-none", "breadcrumbs", "mobile-nav"}


class HtmlText(html.parser.HTMLParser):
    """Visible text of an HTML page as paragraphs; a heading (h1-h3) starts a new section."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections = [[]]   # each: list of paragraphs
        self.line = []         # text pieces of the paragraph being read
        self.skip_depth = 0    # >0 inside a skipped element
        self.stack = []        # open tags, with whether each started a skip
        self.pre = 0

    def _flush(self):
        text = "".join(self.line)
        text = text.strip("\n") if self.pre else re.sub(r"\s+", " ", text).strip()
        if text:
            self.sections[-1].append(text)
        self.line = []

    def handle_starttag(self, tag, attrs):
        if tag in {"br", "hr", "img", "meta", "link", "input", "wbr"}:  # void elements
            if tag == "br" and not self.skip_depth:
                self._flush()
            return
        classes = set((dict(attrs).get("class") or "").split())
        skip = tag in SKIP_TAGS or bool(classes & SKIP_CLASSES) or dict(attrs).get("role") == "navigation"
        self.stack.append((tag, skip))
        if skip:
            self.skip_depth += 1
            return
        if self.skip_depth:
            return
        if tag in HEADING_TAGS:
            self._flush()
            if self.sections[-1]:
                self.sections.append([])
        elif tag in BLOCK_TAGS:
            self._flush()
        if tag == "pre":
            self.pre += 1

    def handle_endtag(self, tag):
        # Pop to the matching open tag (HTML in the wild leaves some unclosed).
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                for t, skip in self.stack[i:]:
                    if skip:
                        self.skip_depth -= 1
                    elif not self.skip_depth and t == "pre":
                        self._flush()
                        self.pre -= 1
                del self.stack[i:]
                break
        if not self.skip_depth and (tag in BLOCK_TAGS or tag in HEADING_TAGS):
            self._flush()

    def handle_data(self, data):
        if not self.skip_depth:
            self.line.append(data)

    def result(self):
        self._flush()
        return ["\n\n".join(s) for s in self.sections if s]


def html_documents(path, min_bytes=200):
    parser = HtmlText()
    parser.feed(Path(path).read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return [s for s in parser.result() if len(s.encode()) >= min_bytes]


def source_html(name, files):
    for f in files:
        for i, text in enumerate(html_documents(f)):
            yield f"{Path(f).name}#{i}", text


def source_bible():
    """KJV chapters through `bible` (package bible-kjv), one verse per line: 'Ge1:1 In the ...'."""
    out = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], check=True, capture_output=True, text=True).stdout
    chapters = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+?)(\d+):(\d+) (.*)$", line)
        if not m:
            continue
        key = f"{m.group(1)} {m.group(2)}"
        chapters.setdefault(key, []).append(m.group(4).strip())
    for key, verses in chapters.items():
        yield key, " ".join(verses)


def paragraph_chunks(paragraphs, chunk=4096):
    """("chunk-<i>", text) documents of consecutive paragraphs, each closed once it holds >= chunk
    characters, for sources without sections of their own (a text file, a dictionary)."""
    doc, index = [], 0
    for p in paragraphs:
        doc.append(p)
        if sum(len(x) for x in doc) >= chunk:
            yield f"chunk-{index}", "\n\n".join(doc)
            doc, index = [], index + 1
    if doc:
        yield f"chunk-{index}", "\n\n".join(doc)


def source_jargon(path="/usr/share/doc/jargon-text/jargon.txt.gz", chunk=4096):
    text = gzip.open(path, "rt", encoding="utf-8", errors="replace").read()
    paragraphs = [re.sub(r"[ \t]+", " ", p).strip() for p in re.split(r"\n\s*\n", text)]
    yield from paragraph_chunks((p for p in paragraphs if p and not set(p) <= set("═─- ")), chunk)


def source_fortunes(folder="/usr/share/games/fortunes"):
    for f in sorted(Path(folder).iterdir()):
        if f.suffix or f.is_symlink() or not f.is_file():
            continue  # .dat indexes, .u8 copies
        cookies = f.read_text(encoding="utf-8", errors="replace").split("\n%\n")
        for i, c in enumerate(cookies):
            c = c.strip().strip("%").strip()
            if len(c) >= 40:
                yield f"{f.name}#{i}", c


def sources():
    py = Path("/usr/share/doc/python3.11/html")
    py_files = sorted(p for p in py.rglob("*.html")
                      if not p.relative_to(py).parts[0].startswith("_")
                      and p.name not in {"genindex.html", "search.html", "py-modindex.html", "contents.html"}
                      and not p.name.startswith("genindex-"))
    dref = sorted(Path("/usr/share/debian-reference").glob("*.en.html"))
    faq = sorted(p for p in Path("/usr/share/doc/debian/FAQ").glob("*.en.html") if p.name != "index.en.html")
    devref = sorted(p for p in Path("/usr/share/developers-reference").glob("*.html")
                    if p.name not in {"index.html", "search.html", "developers-reference.html"})
    gnu = [Path("/usr/share/doc/gnu-standards/standards.html"), Path("/usr/share/doc/gnu-standards/maintain.html")]
    return [
        ("bible-kjv", source_bible()),
        ("python-doc", source_html("python-doc", py_files)),
        ("debian-reference", source_html("debian-reference", dref)),
        ("debian-faq", source_html("debian-faq", faq)),
        ("developers-reference", source_html("developers-reference", devref)),
        ("gnu-standards", source_html("gnu-standards", [p for p in gnu if p.exists()])),
        ("jargon", source_jargon()),
        ("fortunes", source_fortunes()),
    ]


def held_out(source, name, permille):
    return int(hashlib.sha256(f"{source}/{name}".encode()).hexdigest()[:8], 16) % 1000 < permille


def jsonl_write(path, docs):
    """docs: (source, text) pairs, written as {"text", "source"} lines (readers use "text")."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for source, t in docs:
            f.write(json.dumps({"text": t, "source": source}, ensure_ascii=False) + "\n")
    tmp.replace(path)


def prefix_bytes(texts, limit):
    out, total = [], 0
    for t in texts:
        if total >= limit:
            break
        out.append(t)
        total += len(t[1].encode())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--heldout-permille", type=int, default=30, help="share of documents held out, per 1000")
    ap.add_argument("--demo-bytes", type=int, default=131072, help="size of each demo sample file")
    args = ap.parse_args()
    out = Path(args.out_dir)
    (out / "demo").mkdir(parents=True, exist_ok=True)

    train_by_source, heldout, manifest = [], [], {"version": VERSION, "heldout_permille": args.heldout_permille,
                                                   "sources": {}}
    kjv_train, kjv_heldout = [], []
    for source, docs in sources():
        train_docs, n_held, b_train, b_held = [], 0, 0, 0
        for name, text in docs:
            if held_out(source, name, args.heldout_permille):
                heldout.append((source, text))
                n_held, b_held = n_held + 1, b_held + len(text.encode())
                if source == "bible-kjv":
                    kjv_heldout.append((source, text))
            else:
                train_docs.append((source, text))
                b_train += len(text.encode())
                if source == "bible-kjv":
                    kjv_train.append((source, text))
        train_by_source.append(train_docs)
        manifest["sources"][source] = {"train_documents": len(train_docs), "train_bytes": b_train,
                                       "heldout_documents": n_held, "heldout_bytes": b_held}
        print(f"make_corpus: {source:22s} train {len(train_docs):6d} docs {b_train / 1e6:7.2f} MB | "
              f"held-out {n_held:4d} docs {b_held / 1e6:6.2f} MB", flush=True)
    if not kjv_heldout or not kjv_train:
        sys.exit("make_corpus: the KJV gave no documents (is bible-kjv installed?)")

    # Round-robin over sources: any prefix of train.jsonl mixes them.
    train = []
    for i in range(max(len(d) for d in train_by_source)):
        train += [d[i] for d in train_by_source if i < len(d)]
    jsonl_write(out / "train.jsonl", train)
    jsonl_write(out / "heldout.jsonl", heldout)
    jsonl_write(out / "demo" / "restore.jsonl", prefix_bytes(kjv_train, args.demo_bytes))
    jsonl_write(out / "demo" / "heldout.jsonl", prefix_bytes(kjv_heldout, args.demo_bytes))
    totals = {"train_documents": len(train), "train_bytes": sum(len(t.encode()) for _, t in train),
              "heldout_documents": len(heldout), "heldout_bytes": sum(len(t.encode()) for _, t in heldout)}
    manifest["totals"] = totals
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"make_corpus: wrote {out}/train.jsonl ({totals['train_documents']} docs, "
          f"{totals['train_bytes'] / 1e6:.1f} MB) and heldout.jsonl ({totals['heldout_documents']} docs, "
          f"{totals['heldout_bytes'] / 1e6:.2f} MB); demo samples in {out}/demo")


if __name__ == "__main__":
    main()
