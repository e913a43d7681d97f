"""Keeps test text out of training text, for experiments/make_corpus_large.py: the training paragraphs that
a run of N words (13, as GPT-3's decontamination did) shared with a test document touches are dropped
(a run may span short paragraphs), so that text a test source quotes or that quotes it (FOLDOC
entries taken from the Jargon File, the GPL notice of the GNU standards) is no training material.

    guard = Decontaminator(test_texts)
    text = guard.filter(text)      # None when nothing is left
"""
from corpus_dedup import paragraph_key


def word_ngrams(text, n):
    """The text's runs of n words (tuples, hashed in C: this runs over every training paragraph)."""
    words = paragraph_key(text).split()
    return zip(*(words[i:] for i in range(n)))


class Decontaminator:
    def __init__(self, test_texts, n=13):
        self.n = n
        self.test = set()
        for t in test_texts:
            self.test.update(word_ngrams(t, n))
        self.paragraphs_dropped = 0

    def filter(self, text):
        """The text without the paragraphs that a shared run touches; runs may cross paragraph breaks
        (an entry copied with its short paragraphs). Most texts share none: checked at C speed first."""
        paragraphs = text.split("\n\n")
        if self.test.isdisjoint(word_ngrams(text, self.n)):
            return text
        owner = [i for i, p in enumerate(paragraphs) for _ in paragraph_key(p).split()]
        hit = {owner[k] for i, g in enumerate(word_ngrams(text, self.n)) if g in self.test
               for k in range(i, i + self.n)}
        self.paragraphs_dropped += len(hit)
        return "\n\n".join(p for i, p in enumerate(paragraphs) if i not in hit) or None
