"""The languages the synthetic corpus is written in, by ISO 639-1 code."""

from __future__ import annotations

from mixplane.synth.languages import de, en, es, fr, ja, zh
from mixplane.synth.lexicon import Language

LANGUAGES: dict[str, Language] = {
    module.LANGUAGE.code: module.LANGUAGE for module in (en, de, fr, es, zh, ja)
}
SPACED = tuple(code for code, language in LANGUAGES.items() if language.spaced)

__all__ = ["LANGUAGES", "SPACED", "Language"]
