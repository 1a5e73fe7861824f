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
from dataclasses import dataclass
from typing import ClassVar, Literal

from ftfy import TextFixerConfig, fix_text
from pydantic import Field, PrivateAttr

from mixplane.document import Document, Drop
from mixplane.stages.base import Result, Stage

# Line breaks other than \n (after CRLF became \n): CR, NEL, vertical tab, form feed,
# Unicode line and paragraph separators.
_LINE_BREAKS = re.compile(r"[\r\x0b\x0c\x85\u2028\u2029]")
# C0/C1 controls except \t, \n and \r (which line endings handle), lone surrogates (they
# cannot be written as UTF-8), stray byte-order marks and non-characters.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]")
# Spaces that are not U+0020: no-break, en/em and thin spaces... The ideographic space
# U+3000 is part of CJK typography and stays.
_UNICODE_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f]")
# Signatures of UTF-8 read in a single-byte encoding. Windows-1252/Latin-1: a lead-byte
# letter ("Ã", "â") then a continuation-byte character ("©", "€", "™"), or "Ã "/"Â " where
# a no-break space was lost. Windows-1251: "вЂ" (punctuation), "Г"/"В" then a continuation
# character, or a Cyrillic letter then a symbol no Cyrillic word is followed by. Mac Roman:
# a lead-byte symbol ("√", "◊", "¬"...) then a letter or symbol, "‚Ä". Letters Cyrillic
# languages use (і, ї, є, ё, ў, ђ...) and the no-break space Russian typography puts after
# short words are left out, so that clean text does not look broken.
_CONTINUATION = (
    "\u00a1-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
    "\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122\ufffd"
)
_CP1251_SYMBOLS = (
    "\u201a\u201e\u2020\u2021\u20ac\u2030\u2039\u203a\u2022\u2013\u2014\u2122"
    "\u00a4\u00a6\u00a7\u00a9\u00ac\u00ad\u00ae\u00b0\u00b1\u00b5\u00b6\u00b7\u2116"
)
# One character class first (Python's re scans for it quickly), then the signature that
# character starts, picked by a lookbehind on it.
_FTFY_TRIGGERS = re.compile(
    r"[\u00c2-\u00f4\u0410-\u044f\u00ac\u0192\u221a\u2206\u2248\u25ca\u201a\x80-\x9f\ud800-\udfff]"
    rf"(?:(?<=[\u00c2-\u00f4])[\u0080-\u009f{_CONTINUATION}]|(?<=[\u00c2\u00c3])[ \u00a0]"
    rf"|(?<=\u0432)\u0402|(?<=[\u0413\u0412])[\u0402\u0403\u0453\u0409\u040a\u040c\u040b"
    rf"\u040f\u045a\u045c\u045b\u045f\u0408\u0458\u0405\u0455\u00ab\u00bb{_CP1251_SYMBOLS}]"
    rf"|(?<=[\u0410-\u044f])[{_CP1251_SYMBOLS}]"
    r"|(?<=[\u00ac\u0192\u221a\u2206\u2248\u25ca])[^\s\d]|(?<=\u201a)\u00c4"
    r"|(?<=[\x80-\x9f\ud800-\udfff]))"
)
_TRAILING_SPACES = re.compile(r"[ \t]+\n")
_INNER_SPACE_RUNS = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\n)+")


def _ftfy_config() -> TextFixerConfig:
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
    line_endings: bool = Field(True, description="CRLF, CR, NEL, form feed and U+2028/9 become \\n")
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

    _plan: _Plan | None = PrivateAttr(None)

    def model_post_init(self, context: object) -> None:
        self._plan = _Plan.from_options(self)

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        plan, drop_empty = self._plan, self.drop_empty
        results: list[Result] = []
        for doc in docs:
            text = plan.run(doc.text)
            if drop_empty and (not text or text.isspace()):
                results.append(Drop("empty"))
            else:
                doc.text = text
                results.append(doc)
        return results

    def normalize(self, text: str) -> str:
        """The text after every enabled step (usable without a Document)."""
        return self._plan.run(text)


@dataclass(frozen=True)
class _Plan:
    """The enabled steps with their compiled patterns, read once per document."""

    fixer: object | None
    unescape_html: bool
    line_endings: bool
    remove_control_chars: bool
    unicode_form: str | None
    unicode_spaces: bool
    strip_trailing_spaces: bool
    collapse_spaces: bool
    blank_lines: re.Pattern | None
    blank_replacement: str
    trim: bool

    @classmethod
    def from_options(cls, options: Normalize) -> _Plan:
        keep = options.max_blank_lines
        return cls(
            fixer=_ftfy_config() if options.fix_mojibake else None,
            unescape_html=options.unescape_html,
            line_endings=options.line_endings,
            remove_control_chars=options.remove_control_chars,
            unicode_form=None if options.unicode_form == "none" else options.unicode_form,
            unicode_spaces=options.unicode_spaces,
            strip_trailing_spaces=options.strip_trailing_spaces,
            collapse_spaces=options.collapse_spaces,
            # A blank line may hold spaces; a run of more than `keep` blank lines is cut.
            blank_lines=None if keep is None else re.compile(rf"\n(?:[ \t]*\n){{{keep + 1},}}"),
            blank_replacement="" if keep is None else "\n" * (keep + 1),
            trim=options.trim,
        )

    def _repair(self, text: str) -> str:
        # ftfy fixes each line on its own; lines without a signature are left as they are.
        lines = text.split("\n")
        for index, line in enumerate(lines):
            if "\x1b" in line or _FTFY_TRIGGERS.search(line):
                lines[index] = fix_text(line, self.fixer)
        return "\n".join(lines)

    def run(self, text: str) -> str:
        result = self._once(text)
        # Removing controls or mapping spaces can bring two halves of a mojibake sequence
        # together ("Â\x8d‘" -> "Â‘"); a few more rounds make the result a fixed point.
        rounds = 1
        while self.fixer is not None and rounds < 4 and not result.isascii():
            if not _FTFY_TRIGGERS.search(result):
                break
            again = self._once(result)
            if again == result:
                break
            result, rounds = again, rounds + 1
        return result

    def _once(self, text: str) -> str:
        ascii_only = text.isascii()
        # ftfy is slow (its detector reads about 1 MB/s); run it only where one of its enabled
        # repairs can apply: mojibake signatures, ESC, C1 controls or surrogates.
        if self.fixer is not None and (
            "\x1b" in text or (not ascii_only and _FTFY_TRIGGERS.search(text))
        ):
            text = self._repair(text)
            ascii_only = text.isascii()
        if self.unescape_html and "&" in text:
            text = html.unescape(text)
            ascii_only = text.isascii()
        if self.line_endings:
            if "\r" in text:
                text = text.replace("\r\n", "\n")
            text = _LINE_BREAKS.sub("\n", text)
        if self.remove_control_chars:
            text = _CONTROLS.sub("", text)
        if not ascii_only:  # ASCII is in every normal form and has no exotic spaces
            form = self.unicode_form
            if form is not None and not unicodedata.is_normalized(form, text):
                text = unicodedata.normalize(form, text)
            if self.unicode_spaces:
                text = _UNICODE_SPACES.sub(" ", text)
        if self.strip_trailing_spaces:
            if " \n" in text or "\t\n" in text:
                text = _TRAILING_SPACES.sub("\n", text)
            text = text.rstrip(" \t")
        if self.collapse_spaces:
            text = _INNER_SPACE_RUNS.sub(" ", text)
        if self.blank_lines is not None:
            text = self.blank_lines.sub(self.blank_replacement, text)
        if self.trim:
            text = _LEADING_BLANK_LINES.sub("", text).rstrip()
        return text
