"""Paragraph-level deduplication of a corpus, for experiments/make_corpus_large.py: a paragraph that an
earlier document already had (up to case, digits, punctuation and spacing, so that boilerplate that
differs only in a type name or a number counts as the same) is dropped, and a document that lost
paragraphs and was left with less than min_bytes is dropped whole (a short document with nothing
seen before, a fortune cookie, stays). Exact duplicate documents go that way too.

    dedup = ParagraphDedup()
    text = dedup.filter(text)      # None when nothing new is left
"""
import hashlib
import re


def paragraph_key(paragraph):
    """The paragraph's letters-only, lower-case word sequence ('' for pure code/punctuation/numbers)."""
    return " ".join(re.findall(r"[a-z]+", paragraph.lower()))


class ParagraphDedup:
    """Keeps the 64-bit hashes of every paragraph key seen (about 100 bytes each in a Python set)."""

    def __init__(self, min_key_chars=20, min_bytes=200):
        self.seen = set()
        self.min_key_chars = min_key_chars  # shorter keys ("Parameters", "Returns") are kept every time
        self.min_bytes = min_bytes
        self.paragraphs_dropped = 0

    def filter(self, text):
        paragraphs = text.split("\n\n")
        kept = []
        for p in paragraphs:
            key = paragraph_key(p)
            if len(key) >= self.min_key_chars:
                h = hashlib.blake2b(key.encode(), digest_size=8).digest()
                if h in self.seen:
                    continue
                self.seen.add(h)
            kept.append(p)
        if len(kept) == len(paragraphs):
            return text
        self.paragraphs_dropped += len(paragraphs) - len(kept)
        out = "\n\n".join(kept)
        return out if len(out.encode()) >= self.min_bytes else None
