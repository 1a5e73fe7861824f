"""The `Stage` protocol: the one thing every processing step implements.

A stage is a small pydantic model: its fields are its options (validated, with unknown
options rejected), and `apply` takes a Document and returns it (possibly with new metadata
or text) or a `Drop` with a reason. That is all a custom stage needs:

    class Shout(Stage):
        name = "shout"
        suffix: str = "!"

        def apply(self, doc):
            doc.text = doc.text.upper() + self.suffix
            return doc

and a pipeline YAML can use it by import path: `- my_module:Shout: {suffix: "!!"}`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from mixplane.document import Document, Drop

Result = Document | Drop


class Stage(BaseModel):
    """Base class for processing stages.

    Subclasses set `name`, declare options as fields, and implement `apply` (or
    `apply_batch` when batching helps, e.g. for a model). `setup` runs once per worker
    before the first document, for loading models or word lists.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    name: ClassVar[str] = ""
    #: Metadata keys this stage adds to documents it keeps.
    adds: ClassVar[tuple[str, ...]] = ()

    def setup(self) -> None:
        """Prepare per-worker state; called once before the first document."""

    def apply(self, doc: Document) -> Result:
        """Return the (possibly changed) document, or a `Drop` with the reason."""
        raise TypeError(f"stage {self.stage_name()} implements neither apply() nor apply_batch()")

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        """Apply to many documents at once; override when batching is faster."""
        return [self.apply(doc) for doc in docs]

    def stage_name(self) -> str:
        return self.name or type(self).__name__

    def runnable(self) -> Stage:
        """The stage a pipeline runs for these options: itself, or a global stage doing the
        same when the options need the whole corpus (`classify` with `keep_top`)."""
        return self

    def provenance(self) -> dict[str, Any]:
        """What the outputs depend on beyond the options (a model file's content hash, an
        engine's library and its version): the manifest records it beside the stage's name,
        and it is part of the config hash, so a change redoes the work. Empty for most
        stages."""
        return {}

    def node_paths(self) -> list[tuple[str, str, bool]]:
        """Files and folders the stage's workers open besides the run's inputs and output,
        as `(path, what it is, whether they write into it)`: a run on a Ray cluster checks
        that every node sees the local ones (`process.shared_paths`). Empty for most
        stages."""
        return []


class FunctionStage(Stage):
    """Wraps a plain function `f(doc) -> Document | Drop | bool | None` as a stage.

    `False` or `None` drops the document with reason `rejected`; `True` keeps it as is.
    """

    function: Callable[..., Any]
    label: str
    options: dict[str, Any] = {}

    def apply(self, doc: Document) -> Result:
        result = self.function(doc, **self.options)
        if isinstance(result, Document | Drop):
            return result
        return doc if result else Drop("rejected")

    def stage_name(self) -> str:
        return self.label


class SourceScoped(Stage):
    """Applies `inner` only to documents from `sources`; the others pass through unchanged."""

    inner: Stage
    sources: frozenset[str]

    def setup(self) -> None:
        self.inner.setup()

    def stage_name(self) -> str:
        return self.inner.stage_name()

    def provenance(self) -> dict[str, Any]:
        return self.inner.provenance()

    def node_paths(self) -> list[tuple[str, str, bool]]:
        return self.inner.node_paths()

    def apply(self, doc: Document) -> Result:
        return self.inner.apply(doc) if doc.source in self.sources else doc

    def apply_batch(self, docs: list[Document]) -> list[Result]:
        chosen = [i for i, doc in enumerate(docs) if doc.source in self.sources]
        results: list[Result] = list(docs)
        if chosen:
            applied = self.inner.apply_batch([docs[i] for i in chosen])
            for i, result in zip(chosen, applied, strict=True):
                results[i] = result
        return results
