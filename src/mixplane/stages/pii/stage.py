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
from mixplane.process.stage import Result, Stage
from mixplane.stages.pii.detectors import KINDS, find_pii

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
        text = doc.text
        spans = find_pii(text, self._kinds, self.include_private_ips)
        counts = dict.fromkeys(KINDS, 0)
        for span in spans:
            counts[span.kind] += 1
        for kind in KINDS:
            doc.metadata[f"pii_{kind}"] = counts[kind]
        if not spans:
            return doc
        if self.mode == "drop":
            return Drop("contains_pii", {kind: n for kind, n in counts.items() if n})
        if self.mode == "redact":
            pieces = []
            position = 0
            for span in spans:
                pieces.append(text[position : span.start])
                pieces.append(self._replacements[span.kind])
                position = span.end
            pieces.append(text[position:])
            doc.text = "".join(pieces)
        return doc
