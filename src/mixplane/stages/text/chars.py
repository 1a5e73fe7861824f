"""Character classes shared by the word splitter and the quality filters.

Letter case classes are derived from Python's Unicode database once at import, so the
splitter's rules ("a period after a lowercase letter", "a hyphen between letters") work for
every script Python knows, not only Latin.
"""

from __future__ import annotations

import string
import unicodedata

# Unicode's Sentence_Terminal property (full stops, question and exclamation marks of all
# scripts), the set a line or sentence may end with.
SENTENCE_TERMINALS = frozenset(
    "!.?\u0589\u061d\u061e\u061f\u06d4\u0700\u0701\u0702\u07f9\u0837\u0839\u083d\u083e"
    "\u0964\u0965\u104a\u104b\u1362\u1367\u1368\u166e\u1735\u1736\u17d4\u17d5\u1803\u1809"
    "\u1944\u1945\u1aa8\u1aa9\u1aaa\u1aab\u1b4e\u1b4f\u1b5a\u1b5b\u1b5e\u1b5f\u1b7d\u1b7e"
    "\u1b7f\u1c3b\u1c3c\u1c7e\u1c7f\u203c\u203d\u2047\u2048\u2049\u2e2e\u2e3c\u2e53\u2e54"
    "\u3002\ua4ff\ua60e\ua60f\ua6f3\ua6f7\ua876\ua877\ua8ce\ua8cf\ua92f\ua9c8\ua9c9\uaa5d"
    "\uaa5e\uaa5f\uaaf0\uaaf1\uabeb\ufe52\ufe56\ufe57\uff01\uff0e\uff1f\uff61"
    "\U00010a56\U00010a57\U00010f55\U00010f56\U00010f57\U00010f58\U00010f59\U00010f86"
    "\U00010f87\U00010f88\U00010f89\U00011047\U00011048\U000110be\U000110bf\U000110c0"
    "\U000110c1\U00011141\U00011142\U00011143\U000111c5\U000111c6\U000111cd\U000111de"
    "\U000111df\U00011238\U00011239\U0001123b\U0001123c\U000112a9\U0001144b\U0001144c"
    "\U000115c2\U000115c3\U000115c9\U000115ca\U000115cb\U000115cc\U000115cd\U000115ce"
    "\U000115cf\U000115d0\U000115d1\U000115d2\U000115d3\U000115d4\U000115d5\U000115d6"
    "\U000115d7\U00011641\U00011642\U0001173c\U0001173d\U0001173e\U00011944\U00011946"
    "\U00011a42\U00011a43\U00011a9b\U00011a9c\U00011c41\U00011c42\U00011ef7\U00011ef8"
    "\U00011f43\U00011f44\U00016a6e\U00016a6f\U00016af5\U00016b37\U00016b38\U00016b44"
    "\U00016e98\U0001bc9f\U0001da88"
)

# Characters that make a token "punctuation only" for the Gopher word counts: ASCII
# punctuation, the common typographic and CJK full-width marks, control characters and the
# sentence terminals. Bullets, arrows and currency other than `$` count as words, as in the
# reference implementation the defaults follow.
PUNCTUATION = frozenset(
    string.punctuation
    + "\u2013\u2014\u2019\u201c\u201d\u201e\u00ab\u00bb\u00b4\u2026\u2236\u2501\u25ba"
    + "\u3001\u3002\u3008\u3009\u300a\u300b\u300c\u300d\u3010\u3011"
    + "\uff01\uff05\uff08\uff09\uff0c\uff0e\uff11\uff1a\uff1b\uff1f\uff5e"
    + "".join(map(chr, [*range(0, 9), *range(11, 32), *range(127, 160)]))
).union(SENTENCE_TERMINALS)


def _char_class(predicate) -> str:
    """A regex character class body (ranges) for the BMP characters matching `predicate`."""
    ranges: list[tuple[int, int]] = []
    for code in range(0x10000):
        if predicate(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1] = (ranges[-1][0], code)
            else:
                ranges.append((code, code))
    parts = []
    for low, high in ranges:
        parts.append(_escape(low) if low == high else f"{_escape(low)}-{_escape(high)}")
    return "".join(parts)


def _escape(code: int) -> str:
    return f"\\u{code:04x}"


def _uncased_letter(char: str) -> bool:
    return char.isalpha() and not char.isupper() and not char.islower()


def _is_symbol(char: str) -> bool:
    return unicodedata.category(char) == "So"


# Uncased letters (CJK, Arabic, Hebrew...) count as both lower- and uppercase, so that rules
# about letter case never split inside words of those scripts.
ALPHA = _char_class(str.isalpha)
ALPHA_LOWER = _char_class(lambda c: c.islower() or _uncased_letter(c))
ALPHA_UPPER = _char_class(lambda c: c.isupper() or _uncased_letter(c))
# Pictographs and other symbols ("So"), split off like punctuation; emoji live outside the BMP.
SYMBOLS = _char_class(_is_symbol) + r"\U0001f000-\U0001faff"


def is_punctuation_token(token: str) -> bool:
    """True when every character of `token` is Unicode punctuation (category P*).

    Example:
        >>> is_punctuation_token("?!"), is_punctuation_token("$")
        (True, False)
    """
    return all(unicodedata.category(char)[0] == "P" for char in token)
