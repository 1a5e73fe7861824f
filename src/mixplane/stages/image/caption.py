"""`caption_filter`: length limits on an image's caption (the document's text).

Example pipeline step (the DataComp baseline keeps captions of more than 2 words and more
than 5 characters, which are the defaults):

    - caption_filter: {min_words: 3, min_chars: 6, max_words: 77}
"""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field

from mixplane.document import Document, Drop
from mixplane.stages.base import Result, Stage
from mixplane.stages.dedup.text import SPACELESS

# Ideographic space and punctuation (、。「」...) and the full-width forms of ASCII
# punctuation: they separate words in Chinese and Japanese without being words.
_CJK_PUNCTUATION = re.compile(
    r"[\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]"
)


def count_words(caption: str) -> int:
    """Words of a caption: runs of non-space characters, except that every character of a
    script written without spaces (Chinese, Japanese, Thai...) is a word of its own, and
    their punctuation (`。`, `、`, `，`) none.

    Example:
        >>> count_words("a black cat"), count_words("一只黑猫在沙发上睡觉。")
        (3, 10)
        >>> count_words("iPhone 手机"), count_words("ソファで眠る黒い猫")
        (3, 9)
    """
    if caption.isascii():
        return len(caption.split())
    spaceless = len(SPACELESS.findall(caption))
    rest = _CJK_PUNCTUATION.sub(" ", SPACELESS.sub(" ", caption))
    return spaceless + len(rest.split())


class CaptionFilter(Stage):
    """Drops samples whose caption has too few or too many words or characters.

    Words are counted by `count_words`: runs of non-space characters, and in Chinese,
    Japanese and the other scripts written without spaces one per character (so a Chinese
    sentence is not one long word). Characters are counted once surrounding whitespace is
    removed. A caption below `min_words` or `min_chars` is excluded with reason
    `caption_too_short`, one above `max_words` or `max_chars` with `caption_too_long`; the
    detail names the measure, its value and the limit. None turns a limit off. Kept
    samples get `caption_words` and `caption_chars`.

    Example:
        >>> CaptionFilter().apply(Document("a", "a cat", "web"))
        Drop(reason='caption_too_short', detail={'signal': 'words', 'value': 2, 'limit': 3})
    """

    name: ClassVar[str] = "caption_filter"
    adds: ClassVar[tuple[str, ...]] = ("caption_words", "caption_chars")

    min_words: int | None = Field(3, ge=0, description="fewest words (DataComp: more than 2)")
    max_words: int | None = Field(None, ge=0, description="most words")
    min_chars: int | None = Field(6, ge=0, description="fewest characters (DataComp: >5)")
    max_chars: int | None = Field(None, ge=0, description="most characters")

    def apply(self, doc: Document) -> Result:
        caption = doc.text.strip()
        words, chars = count_words(caption), len(caption)
        for signal, value, low, high in (
            ("words", words, self.min_words, self.max_words),
            ("chars", chars, self.min_chars, self.max_chars),
        ):
            if low is not None and value < low:
                return Drop("caption_too_short", {"signal": signal, "value": value, "limit": low})
            if high is not None and value > high:
                return Drop("caption_too_long", {"signal": signal, "value": value, "limit": high})
        doc.metadata["caption_words"] = words
        doc.metadata["caption_chars"] = chars
        return doc
