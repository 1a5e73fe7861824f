"""`pii`: redact (or drop, or only count) e-mail addresses, phone numbers, IP addresses and
payment card numbers.

Counts per kind are recorded as `pii_email`, `pii_phone`, `pii_ip_address` and
`pii_credit_card` in every mode. Private and reserved IP ranges are not personal data and are
left alone unless `include_private_ips` is set.

Example:
    >>> stage = Pii(replacements={"email": "[email]"})
    >>> doc = stage.apply(Document("a", "Write to ana@example.com today.", "web"))
    >>> doc.text, doc.metadata["pii_email"]
    ('Write to [email] today.', 1)
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, PrivateAttr

from mixplane.document import Document, Drop
from mixplane.stages.base import Result, Stage
from mixplane.stages.pii.detectors import KINDS, Span, find_pii

Kind = Literal["email", "phone", "ip_address", "credit_card"]

DEFAULT_REPLACEMENTS = {
    "email": "<EMAIL>",
    "phone": "<PHONE>",
    "ip_address": "<IP_ADDRESS>",
    "credit_card": "<CREDIT_CARD>",
}


class Pii(Stage):
    """Finds personal data; `mode` says what happens to it.

    - `redact` (default): each finding is replaced by its kind's replacement text.
    - `drop`: documents with any finding are dropped with reason `contains_pii`.
    - `annotate`: the text is left alone; only the counts are recorded.
    """

    name: ClassVar[str] = "pii"
    adds: ClassVar[tuple[str, ...]] = tuple(f"pii_{kind}" for kind in KINDS)

    mode: Literal["redact", "drop", "annotate"] = Field("redact", description="what to do")
    kinds: list[Kind] = Field(
        default_factory=lambda: list(KINDS), description="which kinds of personal data to find"
    )
    replacements: dict[Kind, str] = Field(
        default_factory=dict, description="replacement text per kind; default <EMAIL> etc."
    )
    include_private_ips: bool = Field(
        False, description="also treat private, loopback and link-local addresses as PII"
    )

    _kinds: tuple[str, ...] = PrivateAttr(KINDS)
    _replacements: dict[str, str] = PrivateAttr(default_factory=dict)

    def model_post_init(self, context: object) -> None:
        # Detection order decides overlaps; keep the package's order whatever the user wrote.
        self._kinds = tuple(kind for kind in KINDS if kind in self.kinds)
        self._replacements = DEFAULT_REPLACEMENTS | dict(self.replacements)

    def apply(self, doc: Document) -> Result:
        return self.apply_batch([doc])[0]

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        kinds, replacements = self._kinds, self._replacements
        private, mode = self.include_private_ips, self.mode
        results: list[Result] = []
        for doc in docs:
            text = doc.text
            spans = find_pii(text, kinds, private)
            counts = dict.fromkeys(KINDS, 0)
            for span in spans:
                counts[span.kind] += 1
            for kind, found in counts.items():
                doc.metadata[f"pii_{kind}"] = found
            if spans and mode == "drop":
                results.append(Drop("contains_pii", {k: n for k, n in counts.items() if n}))
                continue
            if spans and mode == "redact":
                doc.text = redact(text, spans, replacements)
            results.append(doc)
        return results


def redact(text: str, spans: list[Span], replacements: dict[str, str]) -> str:
    """`text` with each span replaced by its kind's replacement.

    Example:
        >>> redact("call 555-123-4567", [Span("phone", 5, 17, "555-123-4567")], {"phone": "#"})
        'call #'
    """
    pieces = []
    position = 0
    for span in spans:
        pieces.append(text[position : span.start])
        pieces.append(replacements[span.kind])
        position = span.end
    pieces.append(text[position:])
    return "".join(pieces)
