"""The text a fastText classifier sees, the same at training and at scoring time.

fastText reads one example per line and splits it into words itself, at ASCII space, tab,
vertical tab, form feed, carriage return and NUL; a newline would end the example. So a
document becomes one line by two steps only:

1. `str.lower()`, when the model's `lowercase` setting is on (the default);
2. every newline (`\\n`) becomes a space.

Everything else is left to fastText's own word splitting: runs of spaces count as one,
punctuation, digits and markup stay inside words, and other Unicode spaces (U+00A0, U+2003)
do not split words, as in fastText's own tools. A lone surrogate (possible in documents read
with `surrogatepass`) cannot cross into fastText: it becomes `?` (`utf8_safe`), at training
and at scoring time alike.
"""

from __future__ import annotations


def fasttext_text(text: str, lowercase: bool = True) -> str:
    """One document as the single line fastText trains on and scores.

    Example:
        >>> fasttext_text("Hello,\\n\\tWorld  again")
        'hello, \\tworld  again'
        >>> fasttext_text("Keep Case", lowercase=False)
        'Keep Case'
    """
    if lowercase:
        text = text.lower()
    return text.replace("\n", " ")


def utf8_safe(line: str) -> str:
    """`line` with every character UTF-8 cannot encode (a lone surrogate) as `?`.

    Example:
        >>> utf8_safe("bad \\udc80 byte")
        'bad ? byte'
    """
    return line.encode("utf-8", "replace").decode("utf-8")
