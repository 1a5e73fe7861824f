"""Stages defined outside mixplane, used by tests through their import path."""

from __future__ import annotations

import os
import threading
import time

from mixplane import Document, Drop, Stage


class Shout(Stage):
    """Upper-cases text and drops documents containing a banned word."""

    name = "shout"
    adds = ("shouted",)
    suffix: str = "!"
    banned: str = "forbidden"

    def apply(self, doc: Document) -> Document | Drop:
        if self.banned in doc.text:
            return Drop("banned_word", {"word": self.banned})
        doc.text = doc.text.upper() + self.suffix
        doc.metadata["shouted"] = True
        return doc


class Fragile(Stage):
    """Raises on documents whose id ends with a given digit, to test quarantine."""

    name = "fragile"
    digit: str = "3"

    def apply(self, doc: Document) -> Document:
        if doc.id.endswith(self.digit):
            raise ValueError(f"cannot handle {doc.id}")
        return doc


class BuggyUntilFixed(Stage):
    """Fails on documents whose id ends with `suffix` while the file `bug` exists: a stage
    whose code is fixed between two runs of the same config (the test removes the file)."""

    name = "buggy"
    bug: str
    suffix: str = "3"

    def apply(self, doc: Document) -> Document:
        if doc.id.endswith(self.suffix) and os.path.exists(self.bug):
            return doc.metadata["missing"]  # a KeyError, as a real bug would raise
        return doc


class Hold(Stage):
    """Says its process is at work (a file named after its pid in `folder`), then holds the
    task until the process is ended: a run to kill while every worker is busy."""

    name = "hold"
    folder: str

    def apply(self, doc: Document) -> Document:
        open(os.path.join(self.folder, str(os.getpid())), "w").close()
        threading.Event().wait()
        return doc


class Slow(Stage):
    """Sleeps per document, so a run can be killed in the middle."""

    name = "slow"
    seconds: float = 0.01

    def apply(self, doc: Document) -> Document:
        time.sleep(self.seconds)
        doc.metadata["pid_parity"] = None if os.getpid() < 0 else "x"
        return doc


def keep_short(doc: Document, max_chars: int = 60) -> bool:
    """A plain function works as a stage too."""
    return len(doc.text) <= max_chars
