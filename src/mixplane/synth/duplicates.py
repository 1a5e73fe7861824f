"""Exact and near duplicates of earlier documents, with the ground truth for each pair.

Earlier documents wait in reservoirs (a uniform sample of everything seen so far, so a
copy's original may sit in any earlier file). Each original is copied at most once, which
keeps every generated pair apart from all others: the ground truth lists pairs, and no
third document is similar to either member.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from mixplane.synth.documents import Draft
from mixplane.synth.languages import LANGUAGES, SPACED
from mixplane.synth.lexicon import between, pick
from mixplane.synth.similarity import near_duplicate

RESERVOIR = 512
NEAR_MIN_WORDS = 400
MIRRORS = ("mirror.archive-copy.example", "cache.pagesave.example", "www2.reposter.example")
# Which reservoirs a copy in each source may come from.
EXACT_FROM = {
    "web": ("html",),
    "web_html": ("html",),
    "wiki": ("wiki",),
    "code": ("code",),
    "forum": ("forum", "wiki"),
}


@dataclass(slots=True)
class Original:
    id: str
    draft: Draft


class Reservoir:
    """A uniform sample of up to `capacity` earlier documents (reservoir sampling)."""

    def __init__(self, capacity: int = RESERVOIR):
        self.capacity = capacity
        self.items: list[Original] = []
        self.seen = 0

    def offer(self, item: Original, rng: random.Random) -> None:
        self.seen += 1
        if len(self.items) < self.capacity:
            self.items.append(item)
            return
        slot = rng.randrange(self.seen)
        if slot < self.capacity:
            self.items[slot] = item

    def take(self, rng: random.Random, used: set[str]) -> Original | None:
        """Remove and return a random item not yet copied; None when there is none."""
        while self.items:
            index = rng.randrange(len(self.items))
            self.items[index], self.items[-1] = self.items[-1], self.items[index]
            item = self.items.pop()
            if item.id not in used:
                return item
        return None


class Originals:
    """The reservoirs by kind, and the ids already copied."""

    def __init__(self) -> None:
        self.pools = {name: Reservoir() for name in ("html", "wiki", "code", "forum", "near")}
        self.used: set[str] = set()

    def offer(self, doc_id: str, draft: Draft, rng: random.Random) -> None:
        pool = {"web": "html", "web_html": "html"}.get(draft.source, draft.source)
        self.pools[pool].offer(Original(doc_id, draft), rng)
        if near_eligible(draft):
            self.pools["near"].offer(Original(doc_id, draft), rng)

    def take(self, names: tuple[str, ...], rng: random.Random) -> Original | None:
        item = self.pools[pick(rng, names)].take(rng, self.used)
        if item is not None:
            self.used.add(item.id)
        return item


def near_eligible(draft: Draft) -> bool:
    """Long, clean wiki prose in a spaced language, with nothing an edit could corrupt."""
    return (
        draft.source == "wiki"
        and draft.language in SPACED
        and draft.words >= NEAR_MIN_WORDS
        and not draft.pii
        and not draft.lookalikes
    )


def exact_copy(base: Draft, source: str, rng: random.Random) -> Draft:
    """The same text in `source`, with fields fitting where the copy lives."""
    fields = dict(base.fields)
    if source == "web":
        path = fields.get("url", "https://unknown.example/").split("/", 3)[-1]
        fields["url"] = f"https://{pick(rng, MIRRORS)}/{path}"
    elif source == "wiki":
        fields["url"] = f"{fields['url']}?oldid={between(rng, 10_000, 9_999_999)}"
    elif source == "code":
        fields["repo"] = f"{pick(rng, ('acme', 'forks', 'mirror'))}-{fields['repo']}"
        fields["path"] = f"vendor/{fields['path']}"
    elif source in ("forum", "web_html"):
        fields = {}
    return replace(base, source=source, fields=fields)


def near_copy(base: Draft, source: str, target: float, rng: random.Random) -> tuple[Draft, float]:
    """A copy of `base` edited to word 5-gram Jaccard `target`; returns it and the exact value."""
    language = LANGUAGES[base.language]
    text, similarity = near_duplicate(base.text, target, rng, language.replacement_words)
    fields = {}
    if source == "wiki":
        fields = dict(base.fields)
        fields["url"] = f"{fields['url']}?oldid={between(rng, 10_000, 9_999_999)}"
    draft = replace(base, source=source, text=text, fields=fields, words=len(text.split()))
    return draft, similarity
