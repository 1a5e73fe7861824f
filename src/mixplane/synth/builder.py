"""Producing the documents one at a time, in a seeded order across sources.

For each position the builder decides whether the document is an exact copy, a near copy
or an original, drafts it, writes it to its source's current file and records its labels
and, for copies, the ground-truth pair.
"""

from __future__ import annotations

import random
from collections import Counter

import xxhash

from mixplane.synth import documents as drafts
from mixplane.synth.documents import Draft
from mixplane.synth.duplicates import EXACT_FROM, Originals, exact_copy, near_copy
from mixplane.synth.governance import GovernanceTruth, plant_signals
from mixplane.synth.layout import (
    FILE_NAMES,
    HTML_NAME,
    RollingFiles,
    open_sink,
    place,
    place_html,
)
from mixplane.synth.plan import (
    EXACT_SHARE,
    NEAR_SHARE,
    NEAR_TARGETS,
    file_sizes,
    interleaving,
    source_counts,
)
from mixplane.synth.threads import Threads
from mixplane.synth.truth import TruthWriter

# Drafts are redrawn when their text repeats an earlier one, so every duplicate is planned.
MAX_ATTEMPTS = 100


class CorpusBuilder:
    """Writes `documents` documents under `out` from `seed`; see `generate_corpus`."""

    def __init__(
        self,
        out: str,
        documents: int,
        seed: int,
        truth: TruthWriter,
        web_profile: str = "compact",
        governance: bool = False,
    ):
        self.out = out
        self.truth = truth
        self.rng = random.Random(f"mixplane-synth:{seed}")
        # Planted licences and opt-outs draw from their own generator: with or without them
        # the corpus is the same documents, ids and truth.
        self.governance_rng = random.Random(f"mixplane-synth-governance:{seed}")
        self.governance_truth = GovernanceTruth(out) if governance else None
        self.counts = source_counts(documents)
        self.order = interleaving(self.counts, self.rng)
        self.sites = drafts.make_sites(self.rng)
        self.files = {
            source: RollingFiles(
                out,
                source,
                file_sizes(source, self.counts[source]),
                open_sink(source, self.rng, web_profile),
            )
            for source in FILE_NAMES
        }
        self.originals = Originals()
        self.threads = Threads()
        self.serial: Counter = Counter()
        self.seen_texts: set[int] = set()

    def add(self, source: str) -> None:
        """Produce the next document of `source`."""
        rng = self.rng
        draft, base, kind, target, similarity = self._compose(source)
        if self.governance_truth is not None and source in ("web", "web_html") and base is None:
            planted = plant_signals(self.governance_rng, draft.text, source == "web")
            draft.text, draft.headers, draft.governance = (
                planted.html,
                planted.headers,
                planted.truth,
            )
        if source == "forum" and base is not None:
            self.threads.begin(rng, force_new=True, language=draft.language)
            draft.fields = self.threads.fields(rng, draft.text, prose=False)
        serial = self.serial[source]
        self.serial[source] += 1
        if source == "web_html":
            doc_id, name = place_html(self.out, draft, serial)
        else:
            doc_id, name = place(self.files[source], draft, serial, rng)
        if draft.governance is not None and self.governance_truth is not None:
            self.governance_truth.document(doc_id, source, draft.governance)
        if base is None:
            self.originals.offer(doc_id, draft, rng)
        else:
            pair = {"a": base.id, "b": doc_id, "kind": kind, "target_similarity": target}
            self.truth.pair(pair | {"jaccard": round(similarity, 6)})
        self.truth.document(
            {
                "id": doc_id,
                "source": source,
                "file": name,
                "language": draft.language,
                "programming_language": draft.programming_language,
                "kind": draft.kind,
                "copy_of": None if base is None else base.id,
                "copy_kind": kind,
            },
            draft.pii,
            draft.lookalikes,
        )

    def _compose(self, source: str):
        """`(draft, original, kind, target, similarity)`; original is None for new text."""
        rng = self.rng
        roll = rng.random()
        exact, near = EXACT_SHARE.get(source, 0.0), NEAR_SHARE.get(source, 0.0)
        if roll < exact:
            base = self.originals.take(EXACT_FROM[source], rng)
            if base is not None:
                return exact_copy(base.draft, source, rng), base, "exact", 1.0, 1.0
        elif roll < exact + near:
            base = self.originals.take(("near",), rng)
            if base is not None:
                target = rng.choice(NEAR_TARGETS)
                try:
                    draft, similarity = near_copy(base.draft, source, target, rng)
                    return draft, base, "near", target, similarity
                except ValueError:
                    pass  # too coarse to hit the target; write an original instead
        return self._original(source), None, None, None, None

    def _original(self, source: str) -> Draft:
        for _ in range(MAX_ATTEMPTS):
            draft = self._draft(source)
            digest = xxhash.xxh3_64_intdigest(draft.text.encode("utf-8"))
            if digest not in self.seen_texts:
                self.seen_texts.add(digest)
                return draft
        raise RuntimeError(f"could not draft a {source} document unlike earlier ones")

    def _draft(self, source: str) -> Draft:
        rng = self.rng
        if source in ("web", "web_html"):
            draft = drafts.web_draft(rng, self.sites, sum(self.serial.values()))
            draft.source = source
            if source == "web_html":
                draft.fields = {}
            return draft
        if source == "wiki":
            return drafts.wiki_draft(rng)
        if source == "code":
            return drafts.code_draft(rng)
        starts_file = self.files["forum"].starts_new_file()
        language = self.threads.begin(rng, force_new=starts_file)
        draft = drafts.forum_draft(rng, language, self.threads.quote(rng))
        draft.fields = self.threads.fields(rng, draft.text, prose=draft.kind == "clean")
        return draft

    def close(self) -> None:
        for files in self.files.values():
            files.close()
        if self.governance_truth is not None:
            self.governance_truth.close()

    def file_names(self) -> dict[str, list[str]]:
        names = {source: list(files.names) for source, files in self.files.items()}
        html = self.serial["web_html"]
        names["web_html"] = [HTML_NAME.format(index=i) for i in range(html)]
        return names
