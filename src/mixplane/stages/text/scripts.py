"""Which texts are written without spaces between words (Chinese, Japanese, Thai...).

Such text cannot be split into words at whitespace: a whole Chinese sentence would be one
"word". The document's `language` metadata decides when a language-identification stage ran;
otherwise the characters do: a text is unspaced when most of its words would be runs of
characters from those scripts.

Example:
    >>> is_unspaced("这是一个测试句子，没有空格。", None), is_unspaced("A plain sentence.", None)
    (True, False)
"""

from __future__ import annotations

import re

# ISO 639-1/3 codes of languages written without spaces between words.
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo", "dz", "yue", "wuu"})

UNSPACED_CHARS = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u0f00-\u0fff"  # Tibetan
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u2e80-\u2fdf"  # CJK radicals
    "\u3005\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"  # CJK iteration marks, numerals
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u312f\u31a0-\u31bf"  # Bopomofo
    "\u31f0-\u31ff"  # Katakana extensions
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003134f"  # CJK extensions
)
_UNSPACED = re.compile(f"[{UNSPACED_CHARS}]")


def language_code(language: object) -> str | None:
    """The primary code of a language tag: "zh-Hans" -> "zh"; None for anything else."""
    if not isinstance(language, str) or not language:
        return None
    return language.replace("_", "-").split("-", 1)[0].lower()


def is_unspaced(text: str, language: object) -> bool:
    """True when `text` should be split into characters rather than at whitespace."""
    code = language_code(language)
    if code is not None:
        return code in UNSPACED_LANGUAGES
    if _UNSPACED.search(text) is None:
        return False
    unspaced = len(_UNSPACED.findall(text))
    return unspaced > len(text.split())
