"""Planting paraphrase-like near-duplicates, to measure semantic dedup against MinHash.

Pure, seeded string functions over English prose. `vary(text, kind, rng)` returns a variant
of one kind:

- `copy`: a near copy, as MinHash finds: one or two words swapped for synonyms;
- `reorder`: the same sentences in another order;
- `synonyms`: half of the words found in `SYNONYMS` replaced (a word every few, so most of
  the word 5-grams change while the meaning stays);
- `clauses`: a stock clause put in front of two sentences, and a parenthesis, a clause
  between commas or (failing both) a later sentence taken out;
- `paraphrase`: all of these together, plus contractions (`does not` -> `doesn't`).

Example:
    >>> rng = random.Random(0)
    >>> vary("You can use the default value. It is not changed.", "synonyms", rng)
    'You can use the default value. It is not modified.'
"""

from __future__ import annotations

import random
import re

KINDS = ("copy", "reorder", "synonyms", "clauses", "paraphrase")

#: Word -> a word or phrase meaning the same in technical prose (each form listed apart).
SYNONYMS: dict[str, str] = {
    "use": "employ", "uses": "employs", "used": "employed", "using": "employing",
    "call": "invoke", "calls": "invokes", "calling": "invoking",
    "create": "make", "creates": "makes", "created": "made", "creating": "making",
    "return": "give back", "returns": "gives back", "returned": "given back",
    "specify": "give", "specifies": "gives", "specified": "given",
    "different": "distinct", "same": "identical", "many": "numerous", "each": "every",
    "first": "initial", "last": "final", "new": "fresh", "large": "big", "big": "large",
    "small": "little", "possible": "feasible", "useful": "helpful", "helpful": "useful",
    "available": "accessible", "required": "needed", "requires": "needs", "require": "need",
    "need": "require", "needs": "requires", "contains": "holds", "contain": "hold",
    "containing": "holding", "provides": "offers", "provide": "offer", "provided": "supplied",
    "allows": "permits", "allow": "permit", "allowed": "permitted", "permitted": "allowed",
    "however": "nevertheless", "because": "since", "always": "invariably",
    "usually": "normally", "normally": "usually", "often": "frequently",
    "generally": "typically", "typically": "usually", "automatically": "implicitly",
    "changed": "modified", "modified": "changed", "modify": "change",
    "show": "display", "shows": "displays", "shown": "displayed",
    "find": "locate", "finds": "locates", "start": "begin", "starts": "begins",
    "begin": "start", "remove": "delete", "removes": "deletes", "removed": "deleted",
    "delete": "remove", "deleted": "removed", "get": "obtain", "gets": "obtains",
    "error": "failure", "errors": "failures", "program": "application",
    "programs": "applications", "application": "program", "command": "instruction",
    "commands": "instructions", "option": "setting", "options": "settings",
    "argument": "parameter", "arguments": "parameters", "parameter": "argument",
    "parameters": "arguments", "directory": "folder", "directories": "folders",
    "information": "details", "function": "routine", "functions": "routines",
    "check": "verify", "checks": "verifies", "checked": "verified", "run": "execute",
    "runs": "executes", "running": "executing", "simple": "straightforward",
    "easy": "simple", "important": "significant", "correct": "right",
    "exactly": "precisely", "additional": "extra", "extra": "additional",
    "multiple": "several", "several": "multiple", "particular": "specific",
    "specific": "particular", "common": "frequent", "similar": "comparable",
    "therefore": "thus", "thus": "therefore", "although": "though", "though": "although",
    "entire": "whole", "whole": "entire", "easily": "readily", "simply": "just",
    "store": "keep", "stores": "keeps", "stored": "kept", "keep": "retain",
    "keeps": "retains", "kept": "retained", "includes": "comprises", "describes": "explains",
    "describe": "explain", "described": "explained", "explicitly": "expressly",
    "try": "attempt", "tries": "attempts", "ignore": "disregard", "ignores": "disregards",
    "ignored": "disregarded", "affect": "influence", "affects": "influences",
    "indicates": "signals", "indicate": "signal", "determine": "decide",
    "determines": "decides", "determined": "decided", "recommended": "advised",
    "produce": "generate", "produces": "generates", "produced": "generated",
    "generate": "produce", "generates": "produces", "generated": "produced",
    "want": "wish", "wants": "wishes", "ensure": "make sure", "ensures": "makes sure",
    "currently": "presently", "example": "instance", "quickly": "rapidly",
}  # fmt: skip

CLAUSES = ("In practice, ", "As a rule, ", "In general, ", "Note that ", "For the most part, ")
CONTRACTIONS = {
    "does not": "doesn't", "do not": "don't", "is not": "isn't", "are not": "aren't",
    "cannot": "can't", "will not": "won't", "it is": "it's", "there is": "there's",
}  # fmt: skip
_WORD = re.compile(r"[A-Za-z]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(‘])")
_PARENTHESIS = re.compile(r"\s*\([^()]{3,}\)")
_COMMA_CLAUSE = re.compile(r", (?:which|where|when|if|unless|so|for example|e\.g\.)[^,.;]*,")
_NAMES = {"I", "Python", "GNU", "Unix", "Linux", "Windows", "POSIX", "Emacs"}
_ARTICLE = re.compile(r"\b([Aa]n?) $")


def sentences(text: str) -> list[str]:
    """Split prose into sentences at `.`, `!` or `?` followed by a capital.

    Example:
        >>> sentences("One thing. Another (see x.y). Last!")
        ['One thing.', 'Another (see x.y).', 'Last!']
    """
    return [part for part in _SENTENCE_END.split(text.strip()) if part]


def substitute(text: str, share: float, rng: random.Random, limit: int | None = None) -> str:
    """Replace `share` of the words found in `SYNONYMS` (at most `limit`), keeping a capital."""
    found = [m for m in _WORD.finditer(text) if m.group().lower() in SYNONYMS]
    count = min(len(found), max(1, round(share * len(found))) if found else 0)
    if limit is not None:
        count = min(count, limit)
    chosen = sorted(rng.sample(found, count), key=lambda m: m.start())
    pieces, at = [], 0
    for match in chosen:
        word = match.group()
        other = SYNONYMS[word.lower()]
        pieces += [
            text[at : match.start()],
            other[0].upper() + other[1:] if word[0].isupper() else other,
        ]
        at = match.end()
    return "".join(pieces) + text[at:]


def reorder(text: str, rng: random.Random) -> str:
    """The sentences in another order (unchanged if there is only one)."""
    parts = sentences(text)
    if len(parts) < 2:
        return text
    order = list(range(len(parts)))
    while order == sorted(order):
        rng.shuffle(order)
    return " ".join(parts[i] for i in order)


def clauses(text: str, rng: random.Random) -> str:
    """Put a stock clause in front of up to two sentences, and take one clause out."""
    parts = sentences(text)
    for position in rng.sample(range(len(parts)), min(2, len(parts))):
        first, _, rest = parts[position].partition(" ")
        if first.isalpha() and first.istitle() and first not in _NAMES:
            first = first.lower()
        parts[position] = rng.choice(CLAUSES) + " ".join(p for p in (first, rest) if p)
    joined = " ".join(parts)
    for pattern, replacement in ((_PARENTHESIS, ""), (_COMMA_CLAUSE, ",")):
        found = list(pattern.finditer(joined))
        if found:
            match = rng.choice(found)
            return joined[: match.start()] + replacement + joined[match.end() :]
    if len(parts) >= 3:
        del parts[rng.randrange(1, len(parts))]
    return " ".join(parts)


def contract(text: str) -> str:
    """Contract `does not`, `it is` and the like (lowercase forms only)."""
    for long, short in CONTRACTIONS.items():
        text = re.sub(rf"\b{long}\b", short, text)
    return text


def vary(text: str, kind: str, rng: random.Random) -> str:
    """A variant of `text` of one of `KINDS` (see the module docstring)."""
    if kind == "copy":
        return substitute(text, 0.05, rng, limit=2)
    if kind == "reorder":
        return reorder(text, rng)
    if kind == "synonyms":
        return substitute(text, 0.5, rng)
    if kind == "clauses":
        return clauses(text, rng)
    if kind == "paraphrase":
        return contract(clauses(substitute(reorder(text, rng), 0.5, rng), rng))
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
