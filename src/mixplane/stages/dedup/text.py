"""Text normalisation for deduplication, and detection of scripts written without spaces.

Pure string functions. Exact dedup compares texts after `normalize_exact`. MinHash shingles
the words of `shingle_text`: lowercase, accents, punctuation and symbols removed, digits
mapped to 0, one space between words; a text mostly in Chinese, Japanese, Thai or a similar
script has every character as a word, so its n-grams are character n-grams.
"""

from __future__ import annotations

import re
import string
import unicodedata

_PUNCTUATION = re.compile(r"[^\w\s]|_")
_COMBINING = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
#: A character of a script written without spaces between words: Han, kana, Thai, Lao, Khmer,
#: Myanmar, Tibetan.
SPACELESS = re.compile(
    r"[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff"
    r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]"
)
_SPACE = re.compile(r"\s")
_ASCII_FROM = string.punctuation + string.ascii_uppercase + string.digits + string.whitespace
_ASCII_TO = " " * len(string.punctuation) + string.ascii_lowercase + "0" * 10
_ASCII_TABLE = bytes.maketrans(
    _ASCII_FROM.encode(), (_ASCII_TO + " " * len(string.whitespace)).encode()
)


def normalize_exact(
    text: str,
    ignore_case: bool = True,
    ignore_whitespace: bool = True,
    ignore_punctuation: bool = False,
) -> str:
    """The text as exact deduplication compares it.

    Example:
        >>> normalize_exact("  Hello,\\n  World ")
        'hello, world'
        >>> normalize_exact("Hello, World!", ignore_punctuation=True)
        'hello world'
    """
    if ignore_case:
        text = text.lower()
    if ignore_punctuation:
        text = _PUNCTUATION.sub(" " if ignore_whitespace else "", text)
    if ignore_whitespace:
        text = " ".join(text.split())
    return text


def strip_accents(text: str) -> str:
    """Remove combining marks after canonical decomposition.

    Example:
        >>> strip_accents("café naïve")
        'cafe naive'
    """
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", _COMBINING.sub("", unicodedata.normalize("NFD", text)))


class _UnicodeTable(dict):
    """A `str.translate` table filled on first sight of each character: punctuation,
    symbols, separators and controls become a space, decimal digits 0, the rest stays."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        category = unicodedata.category(char)
        if category == "Nd":
            value = "0"
        elif category[0] in "PSZ" or category in ("Cc", "Cf") or char.isspace():
            value = " "
        else:
            value = char
        self[code] = value
        return value


_UNICODE_TABLE = _UnicodeTable()


def shingle_text(text: str) -> tuple[bytes, bool]:
    """The UTF-8 bytes MinHash shingles (normalised words separated by spaces), and whether
    the text is in a spaceless script (then every character is a word).

    Example:
        >>> shingle_text("The 2 Cafés—open 24/7!")[0].split()
        [b'the', b'0', b'cafes', b'open', b'00', b'0']
        >>> words, spaceless = shingle_text("我们去公园。")
        >>> words.decode().split(), spaceless
        (['我', '们', '去', '公', '园'], True)
    """
    if text.isascii():
        return text.encode().translate(_ASCII_TABLE), False
    spaceless = is_spaceless(text)
    text = strip_accents(text.lower()).translate(_UNICODE_TABLE)
    if spaceless:
        text = " ".join(text.replace(" ", ""))
    return text.encode("utf-8", "surrogatepass"), spaceless


def is_spaceless(text: str, share: float = 0.3) -> bool:
    """True when at least `share` of the non-space characters belong to a spaceless script.

    Example:
        >>> is_spaceless("我们今天去公园散步")
        True
        >>> is_spaceless("a mostly English text with 一 character")
        False
    """
    if text.isascii():
        return False
    letters = len(text) - len(_SPACE.findall(text))
    return letters > 0 and len(SPACELESS.findall(text)) >= share * letters
