"""Word units for text written without spaces: every Chinese/Japanese/Thai character is one
unit (with the vowel signs and tone marks written over or under it, in Thai, Lao, Khmer,
Burmese and Tibetan), runs of other characters (Latin words, numbers) are split like spaced
text, and the marks that separate words or syllables in those scripts count as spaces.

Example:
    >>> split_units("我爱Python编程。")
    ['我', '爱', 'Python', '编', '程', '。']
    >>> split_units("ที่นี่")
    ['ที่', 'นี่']
"""

from __future__ import annotations

import re
import unicodedata

from mixplane.stages.text.scripts import UNSPACED_CHARS
from mixplane.stages.text.words import split_words


def _combining_marks(blocks: tuple[tuple[int, int], ...]) -> str:
    """The combining marks (Unicode category M) of these code point blocks."""
    return "".join(
        chr(code)
        for first, last in blocks
        for code in range(first, last + 1)
        if unicodedata.category(chr(code)).startswith("M")
    )


# Marks belong to the character before them: alone, a tone mark is no letter, so text in
# those scripts would seem to have no words. Blocks: combining diacritics, Thai and Lao,
# Tibetan, Myanmar, Khmer, kana voicing marks.
_MARKS = re.escape(
    _combining_marks(
        ((0x0300, 0x036F), (0x0E00, 0x0EFF), (0x0F00, 0x0FFF), (0x1000, 0x109F),
         (0x1780, 0x17FF), (0x3099, 0x309A))
    )
)  # fmt: skip
# Full-width punctuation (。、「」！) is cut off as single characters too.
_SINGLE = UNSPACED_CHARS + "\u3000-\u303f\uff00-\uff65"
_UNIT = re.compile(f"[{_SINGLE}][{_MARKS}]*|[^{_SINGLE}]+")
_HAS_UNSPACED = re.compile(f"[{_SINGLE}]")


# What separates words or syllables in those scripts as a space would: the zero-width
# space (Khmer, Thai, Burmese), the Tibetan tsheg and its non-breaking form.
_SEPARATORS = str.maketrans(dict.fromkeys("\u200b\u0f0b\u0f0c", " "))


def split_units(text: str) -> list[str]:
    """Split into words, cutting tokens of unspaced scripts into single characters."""
    units: list[str] = []
    for token in split_words(text.translate(_SEPARATORS)):
        if _HAS_UNSPACED.search(token) is None:
            units.append(token)
        else:
            units.extend(_UNIT.findall(token))
    return units
