"""Block list files: the format, reading them, and the lists that ship with mixplane.

A block list is UTF-8 text (gzip- or zstd-compressed files are read too; any fsspec URL),
one term a line:

    # Comments: a line starting with "#", or anything after " #" on a line.
    #! language: en          the terms below are for English documents
    badword
    two words                a phrase: its words in order, any whitespace between them
    #! language: de, nl      for German and Dutch documents
    #! match: substring      anywhere, inside longer words too (German compounds)
    arschloch
    #! language: *           for documents in every language

`#! language:` takes language codes (`fr-CA` counts as `fr`: a document's `language` is
compared by its primary code) or `*`, and holds until the next `#! language:` line; before
the first one, terms are for the language the stage's config gives the file, else for
every language. `#! match:` is `word` (the term must not touch a letter, digit, `_` or
combining mark on either side), `substring`, or `auto` (the default, again after every
`#! language:` line): `substring` for terms written in a script without spaces between
words (Chinese, Japanese, Thai, Lao, Khmer, Burmese, Tibetan), `word` for the others.

Example:
    >>> terms = parse_terms("#! language: en\\nfoo bar\\n#! language: ja\\n馬鹿\\n", "x.txt")
    >>> [(t.text, t.languages, t.match) for t in terms]
    [('foo bar', ('en',), 'word'), ('馬鹿', ('ja',), 'substring')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mixplane.errors import ConfigError
from mixplane.stages.text.scripts import UNSPACED_CHARS, language_code
from mixplane.stages.urlfilter.lists import parse_entries

Match = Literal["word", "substring"]
#: The tag of terms for documents in every language.
EVERY_LANGUAGE = "*"
#: Folder of the lists that ship with mixplane, one folder per collection.
BUILTIN_FOLDER = Path(__file__).parent / "lists"

_UNSPACED = re.compile(f"[{UNSPACED_CHARS}]")
# A language tag: a two- or three-letter code, then optional subtags (`fr-CA`, `zh_Hans`).
_LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")
_DIRECTIVE = re.compile(r"\s*#!\s*([A-Za-z_]+)\s*:\s*(.*?)\s*\Z")


@dataclass(frozen=True, slots=True)
class Term:
    """One listed term, the languages it is for (or `*`) and how it is matched."""

    text: str
    languages: tuple[str, ...]
    match: Match


def auto_match(term: str) -> Match:
    """`substring` for a term in a script written without spaces, else `word`."""
    return "substring" if _UNSPACED.search(term) else "word"


def parse_languages(value: str, where: str) -> tuple[str, ...]:
    """The codes of a `#! language:` value ("de, nl", "*"), each reduced to its primary
    code."""
    codes = [part for part in re.split(r"[,\s]+", value) if part]
    if not codes:
        raise ConfigError(f"{where}: '#! language:' needs codes (en, de, ...) or '*'")
    if EVERY_LANGUAGE in codes:
        return (EVERY_LANGUAGE,)
    for code in codes:
        if not _LANGUAGE_TAG.fullmatch(code):
            raise ConfigError(f"{where}: {code!r} is not a language code")
    return tuple(dict.fromkeys(str(language_code(code)) for code in codes))


def parse_terms(text: str, path: str, language: str = EVERY_LANGUAGE) -> list[Term]:
    """The terms of a block list's text (see the module); `language` is the language of
    terms before the first `#! language:` line. Errors name `path` and the line."""
    languages = parse_languages(language, f"block list {path}")
    match: Match | None = None
    terms = []
    for number, line in enumerate(text.splitlines(), 1):
        directive = _DIRECTIVE.match(line)
        if directive:
            key, value = directive.group(1).lower(), directive.group(2)
            where = f"block list {path} line {number}"
            if key == "language":
                languages, match = parse_languages(value, where), None
            elif key == "match":
                if value not in ("word", "substring", "auto"):
                    raise ConfigError(f"{where}: match is {value!r}; use word, substring or auto")
                match = None if value == "auto" else value  # type: ignore[assignment]
            else:
                raise ConfigError(f"{where}: unknown directive {key!r}; use language or match")
            continue
        for entry in parse_entries(line):
            terms.append(Term(entry, languages, match or auto_match(entry)))
    return terms


def builtin_lists() -> dict[str, list[Path]]:
    """The shipped lists by name: each collection (`ldnoobw`) and each of its languages
    (`ldnoobw/de`).

    Example:
        >>> [path.name for path in builtin_lists()["ldnoobw/de"]]
        ['de.txt']
    """
    found: dict[str, list[Path]] = {}
    for folder in sorted(p for p in BUILTIN_FOLDER.iterdir() if p.is_dir()):
        files = sorted(folder.glob("*.txt"))
        found[folder.name] = files
        for file in files:
            found[f"{folder.name}/{file.stem}"] = [file]
    return found


def builtin_files(name: str) -> list[Path]:
    """The files of a shipped list, or ValueError listing the names there are."""
    lists = builtin_lists()
    if name not in lists:
        collections = sorted(key for key in lists if "/" not in key)
        raise ValueError(
            f"no built-in block list {name!r}; there are {', '.join(collections)} "
            f"(all languages) and NAME/LANGUAGE, e.g. {sorted(lists)[1]}"
        )
    return lists[name]
