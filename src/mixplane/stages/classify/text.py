"""The text a fastText classifier sees, the same at training and at scoring time.

fastText reads one line per example and splits words on ASCII whitespace; a newline would end
the example. So a document becomes one line:

1. lowercased with `str.lower()` when the model's `lowercase` setting is on (the default);
2. every run of whitespace (as `str.split()` sees it: spaces, tabs, newlines, and Unicode
   spaces such as U+00A0 and U+2003) becomes one ASCII space, and the ends are trimmed.

Nothing else changes: punctuation, digits and markup stay, so the classifier can learn from
them. A lone surrogate (possible in documents read with `surrogatepass`) cannot cross into
fastText; `fasttext_text` replaces it with `?`.
"""

from __future__ import annotations


def fasttext_text(text: str, lowercase: bool = True) -> str:
    """One document as the single line fastText trains on and scores.

    Example:
        >>> fasttext_text("Hello,\\n\\tWorld\\u00a0 again ")
        'hello, world again'
        >>> fasttext_text("Keep Case", lowercase=False)
        'Keep Case'
    """
    if lowercase:
        text = text.lower()
    line = " ".join(text.split())
    if not line.isascii():
        line = line.encode("utf-8", "replace").decode("utf-8")
    return line
