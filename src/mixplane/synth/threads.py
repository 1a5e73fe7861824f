"""Forum threads: posts follow each other in a thread, in its language, hours apart."""

from __future__ import annotations

import datetime
import random
from typing import Any

from mixplane.synth.languages import LANGUAGES
from mixplane.synth.layout import iso_time
from mixplane.synth.lexicon import between, pick
from mixplane.synth.plan import LANGUAGE_WEIGHTS, draw
from mixplane.synth.prose import first_sentence

NEW_THREAD = 0.3
QUOTE = 0.3
_EPOCH = datetime.datetime(2015, 1, 1)


class Threads:
    """The thread the next post belongs to, and what a reply may quote."""

    def __init__(self) -> None:
        self.serial = 0
        self.thread: str | None = None
        self.language = "en"
        self.moment = _EPOCH
        self.last_text: str | None = None

    def begin(self, rng: random.Random, force_new: bool, language: str | None = None) -> str:
        """Continue the current thread or start a new one; return the post's language."""
        if force_new or self.thread is None or rng.random() < NEW_THREAD:
            self.serial += 1
            self.thread = f"thread-{self.serial:07d}"
            # A copied post may be noise ("und"); the thread still needs a real language.
            known = language in LANGUAGES
            self.language = language if known else draw(rng, LANGUAGE_WEIGHTS["forum"])
            self.moment = _EPOCH + datetime.timedelta(
                days=int(rng.random() * 3650), seconds=int(rng.random() * 86_400)
            )
            self.last_text = None
        else:
            self.moment += datetime.timedelta(seconds=between(rng, 60, 2 * 86_400))
        return language or self.language

    def quote(self, rng: random.Random) -> str | None:
        """The first sentence of the previous post in this thread, sometimes."""
        if self.last_text is None or rng.random() >= QUOTE:
            return None
        return first_sentence(LANGUAGES[self.language], self.last_text)

    def fields(self, rng: random.Random, text: str, prose: bool) -> dict[str, Any]:
        """The forum row's columns besides the text; remembers prose posts for quoting."""
        self.last_text = text if prose else None
        language = LANGUAGES[self.language]
        author = f"{pick(rng, language.first_names).lower()}{between(rng, 1, 999)}"
        return {
            "thread_id": self.thread,
            "author": author,
            "score": min(5000, int(rng.expovariate(0.25))) - 1,
            "created": iso_time(self.moment, " "),
        }
