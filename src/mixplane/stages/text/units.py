"""Word units for text written without spaces: every Chinese/Japanese/Thai character is one
unit, runs of other characters (Latin words, numbers) are split like spaced text.

Example:
    >>> split_units("我爱Python编程。")
    ['我', '爱', 'Python', '编', '程', '。']
"""

from __future__ import annotations

import re

from mixplane.stages.text.scripts import UNSPACED_CHARS
from mixplane.stages.text.words import split_words

# Full-width punctuation (。、「」！) is cut off as single characters too.
_SINGLE = UNSPACED_CHARS + "\u3000-\u303f\uff00-\uff65"
_UNIT = re.compile(f"[{_SINGLE}]|[^{_SINGLE}]+")
_HAS_UNSPACED = re.compile(f"[{_SINGLE}]")


def split_units(text: str) -> list[str]:
    """Split into words, cutting tokens of unspaced scripts into single characters."""
    units: list[str] = []
    for token in split_words(text):
        if _HAS_UNSPACED.search(token) is None:
            units.append(token)
        else:
            units.extend(_UNIT.findall(token))
    return units
