"""`normalize`: Unicode repair and normal form, control characters, whitespace, line endings.

Every step is an option. The order is fixed so that each step sees the previous one's output:
mojibake repair, HTML entities, line endings, control characters, Unicode normal form, exotic
spaces, trailing spaces, runs of spaces, blank lines, leading/trailing blank lines.

Example:
    >>> stage = Normalize()
    >>> doc = Document("a", "cafÃ©  \\r\\n\\r\\n\\r\\n\\r\\nnext\\x07 line", "web")
    >>> stage.apply(doc).text
    'café\\n\\n\\nnext line'
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import ClassVar, Literal

from pydantic import Field, PrivateAttr

from mixplane.document import Document, Drop
from mixplane.process.stage import Result, Stage

# Line breaks other than \n: CRLF, lone CR, NEL, vertical tab, form feed, Unicode line and
# paragraph separators.
_LINE_BREAKS = re.compile(r"\r\n?|[\x0b\x0c\x85\u2028\u2029]")
# C0/C1 controls except \t, \n and \r (which line endings handle), lone surrogates (they
# cannot be written as UTF-8), stray byte-order marks and non-characters.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]")
# Spaces that are not U+0020: no-break, en/em and thin spaces... The ideographic space
# U+3000 is part of CJK typography and stays.
_UNICODE_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f]")
_TRAILING_SPACES = re.compile(r"[ \t]+$", re.MULTILINE)
_INNER_SPACE_RUNS = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def _ftfy_config():
    from ftfy import TextFixerConfig

    # Only the repairs of broken encodings; everything that changes correct text (quotes,
    # full-width forms, ligatures, line breaks, normal form) is off or done by this stage.
    return TextFixerConfig(
        unescape_html=False,
        remove_terminal_escapes=True,
        fix_encoding=True,
        restore_byte_a0=True,
        replace_lossy_sequences=True,
        decode_inconsistent_utf8=True,
        fix_c1_controls=True,
        fix_latin_ligatures=False,
        fix_character_width=False,
        uncurl_quotes=False,
        fix_line_breaks=False,
        fix_surrogates=True,
        remove_control_chars=False,
        normalization=None,
        explain=False,
    )


class Normalize(Stage):
    """Repairs and normalizes text; drops documents left empty (reason `empty`)."""

    name: ClassVar[str] = "normalize"

    fix_mojibake: bool = Field(
        True, description="repair text decoded with the wrong encoding (ftfy), e.g. 'cafÃ©'"
    )
    unescape_html: bool = Field(False, description="turn HTML entities like &amp; into characters")
    unicode_form: Literal["NFC", "NFKC", "NFD", "NFKD", "none"] = Field(
        "NFC", description="Unicode normal form; NFKC also folds compatibility forms"
    )
    line_endings: bool = Field(
        True, description="CRLF, CR, NEL, form feed and U+2028/9 become \\n"
    )
    remove_control_chars: bool = Field(
        True, description="remove control characters other than tab and newline"
    )
    unicode_spaces: bool = Field(
        True, description="no-break, thin and other spaces become ' ' (not U+3000)"
    )
    strip_trailing_spaces: bool = Field(True, description="remove spaces and tabs at line ends")
    collapse_spaces: bool = Field(
        False, description="runs of spaces inside a line become one (indentation is kept)"
    )
    max_blank_lines: int | None = Field(
        2, ge=0, description="longer runs of blank lines are cut to this many; null keeps all"
    )
    trim: bool = Field(True, description="remove blank lines at the start and spaces at the end")
    drop_empty: bool = Field(True, description="drop documents that end up empty")

    _blank_lines: re.Pattern | None = PrivateAttr(None)
    _blank_replacement: str = PrivateAttr("")
    _fixer: object | None = PrivateAttr(None)

    def model_post_init(self, context: object) -> None:
        if self.max_blank_lines is not None:
            keep = self.max_blank_lines
            # A blank line may hold spaces; a run longer than `keep` blank lines is cut.
            self._blank_lines = re.compile(r"\n(?:[ \t]*\n){%d,}" % (keep + 1))
            self._blank_replacement = "\n" * (keep + 1)

    def setup(self) -> None:
        if self.fix_mojibake:
            self._fixer = _ftfy_config()

    def apply(self, doc: Document) -> Result:
        text = self.normalize(doc.text)
        if self.drop_empty and not text.strip():
            return Drop("empty")
        doc.text = text
        return doc

    def normalize(self, text: str) -> str:
        """The text after every enabled step (usable without a Document)."""
        ascii_only = text.isascii()
        if self.fix_mojibake and (not ascii_only or "\x1b" in text):
            from ftfy import fix_text

            if self._fixer is None:
                self.setup()
            text = fix_text(text, self._fixer)
            ascii_only = text.isascii()
        if self.unescape_html and "&" in text:
            text = html.unescape(text)
            ascii_only = text.isascii()
        if self.line_endings:
            text = _LINE_BREAKS.sub("\n", text)
        if self.remove_control_chars:
            text = _CONTROLS.sub("", text)
        if not ascii_only:
            form = self.unicode_form
            if form != "none" and not unicodedata.is_normalized(form, text):
                text = unicodedata.normalize(form, text)
            if self.unicode_spaces:
                text = _UNICODE_SPACES.sub(" ", text)
        if self.strip_trailing_spaces:
            text = _TRAILING_SPACES.sub("", text)
        if self.collapse_spaces:
            text = _INNER_SPACE_RUNS.sub(" ", text)
        if self._blank_lines is not None:
            text = self._blank_lines.sub(self._blank_replacement, text)
        if self.trim:
            text = _LEADING_BLANK_LINES.sub("", text).rstrip()
        return text
