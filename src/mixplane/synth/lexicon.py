"""Languages as data: word lists, sentence templates and the slot functions that fill them.

A template is a string with `{SLOT}` markers, for example `"The {N} {V} the {A} {N}."`.
Templates are compiled once into small generated functions, so filling one costs a few
random draws and an f-string. Generic slots (nouns, adjectives, verbs, places,
people, years, numbers) exist for every language; a language adds its own grammar slots
(articles, cases, contractions) through `extra_slots`, functions of (language, rng, topic).

Example:
    >>> import random
    >>> from mixplane.synth.languages import LANGUAGES
    >>> english = LANGUAGES["en"]
    >>> rng = random.Random(0)
    >>> topic = english.topic(rng)
    >>> english.fill(english.compile("The {N} is {A}."), rng, topic)  # doctest: +SKIP
    'The harbor is coastal.'
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Slot = Callable[[random.Random, "Topic"], str]
GrammarSlot = Callable[["Language", random.Random, "Topic"], str]
Sentence = Callable[..., str]
_MARKER = re.compile(r"\{([A-Za-z]+)\}")
_WORD = re.compile(r"\w+")
TOPIC_NOUNS = 12
TOPIC_SHARE = 0.45
_NUMBERS = ("3", "5", "12", "20", "40", "150", "300", "1200", "5000")


def entries(text: str) -> tuple[str, ...]:
    """Split a comma-separated word list written across lines; blanks are ignored."""
    return tuple(item.strip() for item in text.split(",") if item.strip())


@dataclass(frozen=True, slots=True)
class Topic:
    """What one document is about: a handful of key nouns and a home place."""

    nouns: tuple[Any, ...]
    words: tuple[str, ...]
    place: str


@dataclass
class Language:
    """Everything needed to write plausible text in one language.

    Nouns are plain strings, or `(gender, word)` pairs where articles depend on gender.
    `ui` holds the words a web page's boilerplate needs (menu labels, cookie notice...).
    """

    code: str
    spaced: bool
    nouns: tuple[Any, ...]
    adjectives: tuple[Any, ...]
    verbs: tuple[str, ...]
    past: tuple[str, ...]
    adverbs: tuple[str, ...]
    places: tuple[str, ...]
    first_names: tuple[str, ...]
    last_names: tuple[str, ...]
    sentences: tuple[str, ...]
    chat: tuple[str, ...]
    titles: tuple[str, ...]
    leads: tuple[str, ...]
    headings: tuple[str, ...]
    ui: dict[str, str]
    extra_slots: dict[str, GrammarSlot] = field(default_factory=dict)
    adjective_word: Callable[[Any], str] = str
    compiled_sentences: tuple[Sentence, ...] = field(init=False)
    compiled_chat: tuple[Sentence, ...] = field(init=False)
    compiled_titles: tuple[Sentence, ...] = field(init=False)
    compiled_leads: tuple[Sentence, ...] = field(init=False)
    replacement_words: tuple[str, ...] = field(init=False)
    noun_words: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        # Slots index tuples with one `random()` draw each: the generator fills millions.
        def chooser(items: tuple[Any, ...], convert: Callable[[Any], str] = str) -> Slot:
            count = len(items)
            if convert is str:
                return lambda rng, topic: items[int(rng.random() * count)]
            return lambda rng, topic: convert(items[int(rng.random() * count)])

        self.noun_words = tuple(noun_word(noun) for noun in self.nouns)
        places, place_count = self.places, len(self.places)
        self.slots: dict[str, Slot] = {
            "N": self._bare_noun,
            "A": chooser(self.adjectives, self.adjective_word),
            "V": chooser(self.verbs),
            "VD": chooser(self.past),
            "D": chooser(self.adverbs),
            "P": lambda rng, topic: (
                topic.place if rng.random() < 0.5 else places[int(rng.random() * place_count)]
            ),
            "PER": lambda rng, topic: self.person(rng),
            "FIRST": chooser(self.first_names),
            "Y": lambda rng, topic: str(1780 + int(rng.random() * 244)),
            "NUM": chooser(_NUMBERS),
        }
        for name, grammar in self.extra_slots.items():
            self.slots[name] = functools.partial(grammar, self)
        self.compiled_sentences = tuple(self.compile(t) for t in self.sentences)
        self.compiled_chat = tuple(self.compile(t) for t in self.chat)
        self.compiled_titles = tuple(self.compile(t) for t in self.titles)
        self.compiled_leads = tuple(self.compile(t) for t in self.leads)
        self.replacement_words = self._replacement_words()

    def compile(self, template: str) -> Sentence:
        """Turn a template into a function `(rng, topic, title="") -> str`.

        The function is generated once per template: an f-string whose literal pieces and
        slot functions are bound as default arguments (so nothing needs escaping). This is
        about twice as fast as interpreting the template on every call. A template that
        starts with a slot gets its first letter capitalised. Unknown slots fail here.
        """
        bound: dict[str, Any] = {}
        pieces: list[str] = []
        position = 0
        for match in _MARKER.finditer(template):
            if match.start() > position:
                bound[f"l{len(bound)}"] = template[position : match.start()]
                pieces.append(f"{{l{len(bound) - 1}}}")
            name = match.group(1)
            if name == "TITLE":
                pieces.append("{title}")
            elif name in self.slots:
                bound[f"s{len(bound)}"] = self.slots[name]
                pieces.append(f"{{s{len(bound) - 1}(rng, topic)}}")
            else:
                raise KeyError(f"{self.code}: unknown slot {{{name}}} in {template!r}")
            position = match.end()
        if position < len(template):
            bound[f"l{len(bound)}"] = template[position:]
            pieces.append(f"{{l{len(bound) - 1}}}")
        body = 'f"' + "".join(pieces) + '"'
        if template.startswith("{"):
            body = f"_capitalize({body})"
        defaults = "".join(f", {key}={key}" for key in bound)
        source = f"def sentence(rng, topic, title=''{defaults}):\n    return {body}\n"
        namespace = dict(bound, _capitalize=capitalize)
        exec(source, namespace)  # the source is built above from the template alone
        return namespace["sentence"]

    def fill(self, sentence: Sentence, rng: random.Random, topic: Topic, title: str = "") -> str:
        """One sentence from a compiled template."""
        return sentence(rng, topic, title)

    def _bare_noun(self, rng: random.Random, topic: Topic) -> str:
        words = topic.words if rng.random() < TOPIC_SHARE else self.noun_words
        return words[int(rng.random() * len(words))]

    def noun(self, rng: random.Random, topic: Topic) -> Any:
        nouns = topic.nouns if rng.random() < TOPIC_SHARE else self.nouns
        return nouns[int(rng.random() * len(nouns))]

    def person(self, rng: random.Random) -> str:
        first, last = pick(rng, self.first_names), pick(rng, self.last_names)
        return f"{first} {last}" if self.spaced else f"{last}{first}"

    def topic(self, rng: random.Random) -> Topic:
        """Key nouns drawn with replacement (a repeat just weighs that noun more)."""
        nouns, count = self.nouns, len(self.nouns)
        chosen = tuple(nouns[int(rng.random() * count)] for _ in range(TOPIC_NOUNS))
        words = tuple(noun_word(noun) for noun in chosen)
        return Topic(chosen, words, pick(rng, self.places))

    def join(self, sentences: list[str]) -> str:
        return (" " if self.spaced else "").join(sentences)

    def _replacement_words(self) -> tuple[str, ...]:
        """Single words (no spaces or apostrophes) to swap in when making near-duplicates."""
        pool = [noun_word(n) for n in self.nouns] + list(self.verbs) + list(self.adverbs)
        pool += [self.adjective_word(a) for a in self.adjectives]
        return tuple(sorted({w.lower() for w in pool if _WORD.fullmatch(w)}))


def pick(rng: random.Random, items: Sequence[Any]) -> Any:
    """A uniform choice from one `random()` draw; several times cheaper than
    `Random.choice`, and the generator makes millions of them."""
    return items[int(rng.random() * len(items))]


def between(rng: random.Random, low: int, high: int) -> int:
    """A uniform integer in `[low, high]` from one `random()` draw (like `randint`)."""
    return low + int(rng.random() * (high - low + 1))


def noun_word(entry: Any) -> str:
    """The bare noun of a plain or `(gender, word)` entry."""
    return entry if entry.__class__ is str else entry[1]


def gendered(text: str) -> tuple[tuple[str, str], ...]:
    """Parse `"m:Fluss, f:Stadt"` into `(("m", "Fluss"), ("f", "Stadt"))`."""
    pairs = []
    for item in entries(text):
        gender, _, word = item.partition(":")
        pairs.append((gender, word))
    return tuple(pairs)


def capitalize(text: str) -> str:
    """Upper-case the first letter, skipping opening marks such as '¿' or '«'."""
    if text[:1].isalpha():
        return text[0].upper() + text[1:]
    for index, char in enumerate(text):
        if char.isalpha():
            return text[:index] + char.upper() + text[index + 1 :]
    return text
