"""`langid`: the document's language and its probability, as metadata.

Codes are ISO 639-1 (`en`, `de`, `zh`, `ja`), or ISO 639-3 for the few languages that have
no two-letter code. The model ships inside the py3langid package (134 codes after
folding varieties, 4.5 MB, no download; see `model.py` for how it runs in batches). Its
probabilities are calibrated by document length, so `language_score` reads as the chance the
label is right. Chinese and Japanese share the Han script; for text written in it the kana
decide (see `codes.han_script_language`): the score is the larger of the model's
probability for the two and the share of Han and kana among the letters, times the
probability that the kana evidence chose right.

Example:
    >>> stage = LanguageId(keep=["en", "de"], min_score=0.5)
    >>> stage.setup()
    >>> [r.metadata["language"] for r in stage.apply_batch(
    ...     [Document("a", "Dies ist ein ganz normaler deutscher Satz.", "web")])]
    ['de']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import Field, PrivateAttr, field_validator

from mixplane.document import Document, Drop
from mixplane.stages.base import Result, Stage
from mixplane.stages.langid.codes import (
    CJK_SHARE_FOR_SCRIPT_RULE,
    MODEL_CODES,
    UNDETERMINED,
    fold_to_codes,
    han_script_language,
    has_letters,
)
from mixplane.stages.langid.model import NgramLanguageModel

_models: dict[str, tuple[NgramLanguageModel, tuple[str, ...], np.ndarray]] = {}
#: Default `min_chars` for captions: shorter ones are too short for a reliable label.
CAPTION_MIN_CHARS = 25


def _load_model() -> tuple[NgramLanguageModel, tuple[str, ...], np.ndarray]:
    """The model, its output codes and folding matrix, loaded once per process."""
    if "default" not in _models:
        model = NgramLanguageModel.load()
        codes, fold = fold_to_codes(model.labels)
        _models["default"] = (model, codes, fold)
    return _models["default"]


class LanguageId(Stage):
    """Adds `language` and `language_score`; with `keep` or `min_score` it also filters.

    Without `keep` and `min_score` every document is kept and only annotated. Documents in
    other languages are dropped with reason `language_not_kept`, those scoring below
    `min_score` with `low_language_score`. Text without letters gets language `und`, score 0,
    and so does text shorter than `min_chars` (surrounding space removed; Han and kana text
    excepted, its script decides): below about 25 characters the n-gram model's label is
    often wrong (short English captions: 79% mislabelled under 10 characters, 59% at 10-14,
    28% at 15-19, 8% at 20-24, none of 103 from 25 on; `bench/images/langid_captions.py`).
    By default that limit is 25 characters for captions (documents with `media`: image
    samples) and 0 for other text; add `und` to `keep` to keep short captions.
    """

    name: ClassVar[str] = "langid"
    adds: ClassVar[tuple[str, ...]] = ("language", "language_score")

    keep: list[str] | None = Field(
        None, description="ISO 639-1 codes to keep, e.g. [en, de]; others are dropped"
    )
    min_score: float | None = Field(
        None, ge=0.0, le=1.0, description="drop documents whose language probability is lower"
    )
    sample_chars: int = Field(
        1000, ge=20, description="classify the first this many characters (speed; long pages)"
    )
    min_chars: int | None = Field(
        None,
        ge=0,
        description="shorter texts get language und (default: 25 characters for captions, "
        "documents with an image; 0 for other text)",
    )

    _runtime: _Runtime | None = PrivateAttr(None)

    @field_validator("keep")
    @classmethod
    def _known_codes(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        codes = [code.strip().lower() for code in value]
        unknown = [code for code in codes if code not in MODEL_CODES | {UNDETERMINED}]
        if unknown:
            valid = ", ".join(sorted(MODEL_CODES))
            raise ValueError(f"unknown language code(s) {unknown}; valid codes: {valid}")
        return codes

    def setup(self) -> None:
        model, codes, fold = _load_model()
        keep = frozenset(self.keep) if self.keep is not None else None
        self._runtime = _Runtime(model, codes, fold, keep, codes.index("zh"), codes.index("ja"))

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        if self._runtime is None:
            self.setup()
        runtime = self._runtime
        limit = self.sample_chars
        samples = [doc.text[:limit] for doc in docs]
        rows = runtime.model.probabilities([runtime.model.encode(s) for s in samples])
        rows = rows @ runtime.fold
        return [
            self._decide(doc, self._language(runtime, sample, row, bool(doc.media)), runtime.keep)
            for doc, sample, row in zip(docs, samples, rows, strict=True)
        ]

    def detect(self, text: str, caption: bool = False) -> tuple[str, float]:
        """The (code, probability) the stage would record for `text` (as an image's caption
        when `caption`)."""
        if self._runtime is None:
            self.setup()
        runtime = self._runtime
        sample = text[: self.sample_chars]
        row = runtime.model.probabilities([runtime.model.encode(sample)])[0] @ runtime.fold
        return self._language(runtime, sample, row, caption)

    def _language(
        self, runtime: _Runtime, sample: str, row: np.ndarray, caption: bool
    ) -> tuple[str, float]:
        limit = self.min_chars
        if limit is None:
            limit = CAPTION_MIN_CHARS if caption else 0
        if len(sample.strip()) < limit and han_script_language(sample) is None:
            return UNDETERMINED, 0.0
        return runtime.language(sample, row)

    def _decide(
        self, doc: Document, found: tuple[str, float], keep: frozenset[str] | None
    ) -> Result:
        language, score = found
        doc.metadata["language"] = language
        doc.metadata["language_score"] = score
        if keep is not None and language not in keep:
            return Drop("language_not_kept", {"language": language, "score": score})
        if self.min_score is not None and score < self.min_score:
            return Drop("low_language_score", {"language": language, "score": score})
        return doc


@dataclass(frozen=True)
class _Runtime:
    """What `setup` prepares: the model, output codes and the codes to keep."""

    model: NgramLanguageModel
    codes: tuple[str, ...]
    fold: np.ndarray
    keep: frozenset[str] | None
    zh: int
    ja: int

    def language(self, sample: str, row: np.ndarray) -> tuple[str, float]:
        best = int(row.argmax())
        if row[best] == 0.0 or not has_letters(sample):
            return UNDETERMINED, 0.0
        language, score = self.codes[best], float(row[best])
        script = han_script_language(sample)
        if script is not None:
            script_language, share, choice = script
            if language in ("zh", "ja") or share >= CJK_SHARE_FOR_SCRIPT_RULE:
                pooled = float(row[self.zh] + row[self.ja])
                language, score = script_language, max(pooled, share) * choice
        return language, round(min(score, 1.0), 4)
