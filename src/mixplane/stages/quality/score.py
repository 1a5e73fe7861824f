"""`score`: store quality signals as metadata without dropping anything.

Runs the chosen filters in `mode: annotate`: each adds its signals (for example
`fineweb_line_punct_ratio`, `gopher_stop_words`) and `<filter>_reason`, the reason it would
have dropped the document ("" when it would keep it). The catalog can then select by them.

Example (YAML):
    - score: {filters: [gopher_quality, fineweb], options: {fineweb: {short_line_length: 40}}}
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr

from mixplane.document import Document
from mixplane.errors import ConfigError
from mixplane.stages.base import Result, Stage
from mixplane.stages.build import build_stage
from mixplane.stages.quality.base import QualityFilter

FilterName = Literal["gopher_quality", "gopher_repetition", "c4", "fineweb", "wordlist"]


class Score(Stage):
    """Annotates documents with the signals of several quality filters."""

    name = "score"

    filters: list[FilterName] = Field(
        default_factory=lambda: ["gopher_quality", "gopher_repetition", "c4", "fineweb"],
        description="the filters whose signals to add, in order",
    )
    options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="options per filter, e.g. {c4: {min_sentences: 3}}"
    )
    _stages: list[QualityFilter] = PrivateAttr(default_factory=list)

    def model_post_init(self, context: Any) -> None:
        unknown = sorted(set(self.options) - set(self.filters))
        if unknown:
            raise ConfigError(
                f"stage 'score': options given for {', '.join(unknown)}, which is not in "
                f"filters ({', '.join(self.filters)})"
            )
        self._stages = [
            build_stage(name, {**self.options.get(name, {}), "mode": "annotate"})
            for name in self.filters
        ]

    def setup(self) -> None:
        for stage in self._stages:
            stage.setup()

    def apply(self, doc: Document) -> Result:
        for stage in self._stages:
            doc = stage.apply(doc)
        return doc
