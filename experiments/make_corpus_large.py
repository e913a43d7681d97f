#!/usr/bin/env python3
"""Builds the large English pretraining corpus (the large budget: tens of millions of DISTINCT
training tokens, where scripts/make_corpus.py's corpus has about 4M): make_corpus.py's corpus (BASE)
plus the English manuals, dictionaries and man pages of about fifty Debian packages that
experiments/make_corpus_large.sh unpacks into PACKAGES/<package>/ with `apt-get download` and `dpkg-deb -x`.

    experiments/make_corpus_large.py BASE PACKAGES OUT_DIR [--heldout-permille 30] [--test-sources jargon gnu-standards]

Writes OUT_DIR/train.jsonl, OUT_DIR/heldout.jsonl ({"text", "source"} per line, one document each,
as make_corpus.py does) and OUT_DIR/manifest.json (per source: documents and bytes kept, dropped).
  - The test sources' documents (experiments/experiment_real_data.py --test-sources) all go to heldout.jsonl,
    none to train.jsonl, and no training paragraph shares a run of 13 words with them
    (corpus_decontaminate.py).
  - A paragraph that an earlier document (of any source or split) already had is dropped, and so is a
    document left with < 200 bytes (corpus_dedup.py): the tokens of train.jsonl are distinct text.
  - BASE's documents keep their split; a new one is held out as make_corpus.held_out says.
  - train.jsonl interleaves sources in proportion to their sizes, so that any prefix is a mixture.
Python standard library, man-db/groff (man pages) and perl (pod2text).
"""
import argparse
import json
from pathlib import Path

import sys  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))  # make_corpus.py
from corpus_debian import gcide_clean, html_files, source_dictd, source_html_english, source_man, source_pod, source_text
from corpus_decontaminate import Decontaminator
from corpus_dedup import ParagraphDedup
from make_corpus import held_out, jsonl_write

VERSION = 1  # bump when extraction changes, so experiments/make_corpus_large.sh rebuilds a cached corpus

# source: (package, folders to skip). Left out after a survey: python-pandas-doc (249 MB of HTML for
# 2 MB of text), imagemagick-6-doc (mostly option tables), tcl8.6-doc (C API man pages), dict-vera
# (acronym list), dict-jargon (the Jargon File, a test source).
HTML_PACKAGES = {
    "linux-doc": ("linux-doc-6.1", ("translations", "Documentation")),  # Documentation/: the .rst again
    "rust-doc": ("rust-doc", ("src", "arch", "core_arch", "implementors")),  # source, 26k SIMD intrinsics
    "openjdk-doc": ("openjdk-17-doc", ("src",)),
    "sagemath-doc": ("sagemath-doc", ()),
    "racket-doc": ("racket-doc", ()),
    "ghc-doc": ("ghc-doc", ("src",)),
    "cppreference": ("cppreference-doc-en-html", ()),
    "qt5-doc": ("qtbase5-doc-html", ()),
    "twisted-doc": ("twisted-doc", ()),
    "boost-doc": ("libboost1.81-doc", ()),
    "db5.3-doc": ("db5.3-doc", ()),
    "ada-reference-manual": ("ada-reference-manual-2020", ()),
    "erlang-doc": ("erlang-doc", ()),
    "scipy-doc": ("python-scipy-doc", ()),
    "sklearn-doc": ("python-sklearn-doc", ()),
    "sympy-doc": ("python-sympy-doc", ()),
    "statsmodels-doc": ("python-statsmodels-doc", ()),
    "astropy-doc": ("python-astropy-doc", ()),
    "django-doc": ("python-django-doc", ()),
    "postgresql-doc": ("postgresql-doc-15", ()),
    "lilypond-doc": ("lilypond-doc-html", ()),
    "libreoffice-help": ("libreoffice-help-en-us", ()),
    "llvm-doc": ("llvm-16-doc", ()),
    "git-doc": ("git-doc", ()),
    "r-doc": ("r-doc-html", ()),
    "cmake-doc": ("cmake-doc", ()),
    "maxima-doc": ("maxima-doc", ()),
    "octave-doc": ("octave-doc", ()),
    "apache2-doc": ("apache2-doc", ()),
    "grass-doc": ("grass-doc", ()),
    "zsh-doc": ("zsh-doc", ()),
    "bash-doc": ("bash-doc", ()),
    "gimp-help": ("gimp-help-en", ()),
    "gnuplot-doc": ("gnuplot-doc", ()),
    "debian-handbook": ("debian-handbook", ()),
    "gnucash-docs": ("gnucash-docs", ()),
    "sphinx-doc": ("sphinx-doc", ()),
    "freedombox-doc": ("freedombox-doc-en", ()),
    "debian-policy": ("debian-policy", ()),
    "debian-history": ("debian-history", ()),
    "sbcl-doc": ("sbcl-doc", ()),
    "xorg-docs": ("xorg-docs", ()),
}
DICTIONARIES = {"gcide": ("dict-gcide", gcide_clean), "wordnet": ("dict-wn", str.strip),
                "foldoc": ("dict-foldoc", str.strip), "devils-dictionary": ("dict-devil", str.strip)}


def packages_needed():
    """Every Debian package the sources read (experiments/make_corpus_large.sh downloads these)."""
    return ([p for p, _ in HTML_PACKAGES.values()] + [p for p, _ in DICTIONARIES.values()]
            + ["manpages", "manpages-dev", "perl-doc", "vim-runtime"])


def sources(pkgs):
    """(source, documents) pairs, documents produced lazily in the order they are read."""
    out = [(s, source_html_english(html_files(pkgs / p, skip))) for s, (p, skip) in HTML_PACKAGES.items()]
    for s, (p, clean) in DICTIONARIES.items():
        name = next((pkgs / p / "usr/share/dictd").glob("*.index")).stem
        out.append((s, source_dictd(pkgs / p / f"usr/share/dictd/{name}.index",
                                    pkgs / p / f"usr/share/dictd/{name}.dict.dz", clean)))
    man = sorted((pkgs / "manpages").glob("usr/share/man/man*/*")) + sorted(
        (pkgs / "manpages-dev").glob("usr/share/man/man*/*"))
    out.append(("man-pages", source_man(man)))
    out.append(("perl-doc", source_pod(sorted((pkgs / "perl-doc").rglob("*.pod")))))
    out.append(("vim-help", source_text(sorted((pkgs / "vim-runtime").glob("usr/share/vim/vim*/doc/*.txt")))))
    return out


def jsonl_read(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def interleaved(by_source):
    """Documents of all sources, each source's spread evenly over the whole list (stable order)."""
    keyed = [((i + 0.5) / len(docs), k, d) for k, docs in enumerate(by_source) for i, d in enumerate(docs)]
    return [d for _, _, d in sorted(keyed, key=lambda x: (x[0], x[1]))]


def text_bytes(pairs):
    return sum(len(t.encode()) for _, t in pairs)


def base_inputs(base, test_sources):
    """(test documents as (source, text), [(source, (text, held_out) pairs)]) of make_corpus.py's corpus."""
    docs = [(d, False) for d in jsonl_read(base / "train.jsonl")] + [(d, True) for d in jsonl_read(base / "heldout.jsonl")]
    test = [(d["source"], d["text"]) for d, _ in docs if d["source"] in test_sources]
    missing = test_sources - {s for s, _ in test}
    if missing:
        raise SystemExit(f"make_corpus_large: {base} has no test source {', '.join(sorted(missing))}")
    by_source = {}
    for d, held in docs:
        if d["source"] not in test_sources:
            by_source.setdefault(d["source"], []).append((d["text"], held))
    return test, list(by_source.items())


def filtered(source, docs, guard, dedup):
    """(train, held-out) (source, text) pairs of one source's (text, held_out) documents after the test
    overlap and duplicate filters, and its manifest entry; prints a line."""
    train, held, n_read, b_read = [], [], 0, 0
    for text, is_held in docs:
        n_read, b_read = n_read + 1, b_read + len(text.encode())
        text = guard.filter(text)
        text = text and dedup.filter(text)
        if text is not None:
            (held if is_held else train).append((source, text))
    entry = {"read_documents": n_read, "read_bytes": b_read, "train_documents": len(train), "train_bytes": text_bytes(train),
             "heldout_documents": len(held), "heldout_bytes": text_bytes(held)}
    print(f"make_corpus_large: {source:22s} read {b_read / 1e6:7.2f} MB -> train {len(train):6d} docs "
          f"{text_bytes(train) / 1e6:7.2f} MB | held-out {len(held):5d} docs {text_bytes(held) / 1e6:5.2f} MB", flush=True)
    return train, held, entry


def write(out, train, heldout, manifest):
    jsonl_write(out / "train.jsonl", train)
    jsonl_write(out / "heldout.jsonl", heldout)
    manifest["totals"] = {"train_documents": len(train), "train_bytes": text_bytes(train),
                          "heldout_documents": len(heldout), "heldout_bytes": text_bytes(heldout)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    t, d = manifest["totals"], manifest["dropped_paragraphs"]
    print(f"make_corpus_large: wrote {out}/train.jsonl ({t['train_documents']} docs, {t['train_bytes'] / 1e6:.1f} MB)"
          f" and heldout.jsonl ({t['heldout_documents']} docs, {t['heldout_bytes'] / 1e6:.2f} MB); dropped "
          f"{d['duplicate']} duplicate paragraphs, {d['test_overlap']} overlapping the test sources")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", help="make_corpus.py's output folder")
    ap.add_argument("packages", help="folder of unpacked packages, one subfolder per package")
    ap.add_argument("out_dir")
    ap.add_argument("--heldout-permille", type=int, default=30, help="share of new documents held out, per 1000")
    ap.add_argument("--test-sources", nargs="+", default=["jargon", "gnu-standards"])
    args = ap.parse_args()
    out, test_sources = Path(args.out_dir), set(args.test_sources)
    out.mkdir(parents=True, exist_ok=True)
    test, inputs = base_inputs(Path(args.base), test_sources)
    inputs += [(s, ((t, held_out(s, n, args.heldout_permille)) for n, t in docs))
               for s, docs in sources(Path(args.packages))]
    guard, dedup = Decontaminator(t for _, t in test), ParagraphDedup()
    train_by_source, heldout = [], list(test)
    manifest = {"version": VERSION, "test_sources": sorted(test_sources), "sources": {}}
    for source, docs in inputs:
        train, held, manifest["sources"][source] = filtered(source, docs, guard, dedup)
        train_by_source.append(train)
        heldout += held
    manifest["dropped_paragraphs"] = {"duplicate": dedup.paragraphs_dropped, "test_overlap": guard.paragraphs_dropped}
    write(out, interleaved(train_by_source), heldout, manifest)


if __name__ == "__main__":
    main()
