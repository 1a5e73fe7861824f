"""Plausible source files: Python, JavaScript, C, Go and Rust.

A file is a header (imports, sometimes a copyright line) and a few functions drawn from
per-language shapes. Placeholders in a shape are filled consistently within one function:
`{f}` a function name, `{a}`/`{b}`/`{c}` variables, `{T}` a type name, `{n}` a number,
`{doc}` a comment sentence.

Example:
    >>> import random
    >>> code = source_file(random.Random(4), "go", author=None)
    >>> code.text.startswith("package ")
    True
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from mixplane.synth.languages import LANGUAGES
from mixplane.synth.lexicon import between, entries, noun_word, pick

_ENGLISH = LANGUAGES["en"]
_NOUNS = tuple(noun_word(n) for n in _ENGLISH.nouns if " " not in noun_word(n))
_VERBS = entries("""
    parse, load, build, merge, count, update, render, check, split, encode, decode, fetch, store,
    resolve, compute, collect, format
""")
# (imperative, third person) forms of what a function does: "Return ..." / "returns ...".
_PURPOSES = (
    ("Return the {noun} for the given {noun2}.", "returns the {noun} for the given {noun2}."),
    ("Compute the total {noun}, skipping empty {noun2} entries.", "computes the total {noun}."),
    ("Keep the {noun} cache in sync with the {noun2}.", "keeps the {noun} cache in sync."),
    ("Validate the {noun} before it reaches the {noun2}.", "validates the {noun} first."),
    ("Convert a raw {noun} into a normalized {noun2}.", "converts a raw {noun} into a {noun2}."),
)
_PROJECT_SUFFIXES = ("", "-tools", "-lib", "-kit", "-server", "-cli", "-core", "-utils")
SHAPES = {
    "python": (
        'def {f}({a}, {b}={n}):\n    """{doc}"""\n    {c} = []\n    for item in {a}:\n'
        "        if item is None:\n            continue\n        {c}.append(item * {b})\n"
        "    return {c}\n",
        'def {f}({a}: dict, {b}: str) -> int:\n    """{doc}"""\n    # {doc2}\n'
        "    {c} = {a}.get({b}, {n})\n    if {c} < 0:\n"
        '        raise ValueError(f"bad {b}: {{{c}}}")\n    return {c} + len({a})\n',
        'class {T}:\n    """{doc}"""\n\n    def __init__(self, {a}):\n        self.{a} = {a}\n'
        "        self.{c} = {n}\n\n    def {f}(self, {b}):\n"
        "        self.{c} += {b}\n        return self.{a}, self.{c}\n",
    ),
    "javascript": (
        "/** {doc} */\nfunction {f}({a}, {b}) {{\n  const {c} = [];\n"
        "  for (const item of {a}) {{\n    if (item > {n}) {{\n      {c}.push(item + {b});\n"
        "    }}\n  }}\n  return {c};\n}}\n",
        "// {doc}\nconst {f} = async ({a}) => {{\n  const {c} = await fetch(`/api/${{{a}}}`);\n"
        "  if (!{c}.ok) {{\n    throw new Error('request failed: ' + {c}.status);\n  }}\n"
        "  return {c}.json();\n}};\n",
        "class {T} {{\n  // {doc}\n  constructor({a}) {{\n    this.{a} = {a};\n"
        "    this.{c} = {n};\n  }}\n\n  {f}({b}) {{\n    this.{c} += {b};\n"
        "    return this.{c};\n  }}\n}}\n",
    ),
    "c": (
        "/* {doc} */\nstatic int {f}(const int *{a}, size_t {b})\n{{\n    int {c} = 0;\n"
        "    for (size_t i = 0; i < {b}; i++) {{\n        if ({a}[i] > {n})\n"
        "            {c} += {a}[i];\n    }}\n    return {c};\n}}\n",
        "/* {doc} */\nint {f}(struct {t} *{a}, int {b})\n{{\n    if ({a} == NULL)\n"
        "        return -1;\n    /* {doc2} */\n    {a}->{c} = {b} * {n};\n    return 0;\n}}\n",
    ),
    "go": (
        "// {F} {doc2}\nfunc {F}({a} []int, {b} int) int {{\n\t{c} := 0\n"
        "\tfor _, v := range {a} {{\n\t\tif v > {b} {{\n\t\t\t{c} += v\n\t\t}}\n\t}}\n"
        "\treturn {c} + {n}\n}}\n",
        "// {T} {doc2}\ntype {T} struct {{\n\t{A} string\n\t{C} int\n}}\n\n"
        "// {F} {doc2}\nfunc (x *{T}) {F}({b} int) error {{\n\tif {b} < 0 {{\n"
        '\t\treturn fmt.Errorf("invalid {b}: %d", {b})\n\t}}\n\tx.{C} += {b}\n\treturn nil\n}}\n',
    ),
    "rust": (
        "/// {doc}\npub fn {f}({a}: &[i64], {b}: i64) -> i64 {{\n    let mut {c} = 0;\n"
        "    for v in {a} {{\n        if *v > {b} {{\n            {c} += v;\n        }}\n    }}\n"
        "    {c} + {n}\n}}\n",
        "/// {doc}\npub struct {T} {{\n    pub {a}: String,\n    {c}: usize,\n}}\n\n"
        "impl {T} {{\n    /// {doc2}\n    pub fn {f}(&mut self, {b}: usize) -> usize {{\n"
        "        self.{c} += {b};\n        self.{c}\n    }}\n}}\n",
    ),
}
HEADERS = {
    "python": "import json\nimport os\nfrom typing import Any\n",
    "javascript": "'use strict';\n\nconst path = require('path');\n",
    "c": "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n",
    "go": 'package {pkg}\n\nimport (\n\t"fmt"\n\t"strings"\n)\n\nvar _ = strings.TrimSpace\n',
    "rust": "use std::collections::HashMap;\n",
}
COMMENT = {"python": "#", "javascript": "//", "c": "//", "go": "//", "rust": "//"}
EXTENSIONS = {"python": "py", "javascript": "js", "c": "c", "go": "go", "rust": "rs"}
LICENSES = ("MIT", "Apache-2.0", "BSD-3-Clause", "GPL-3.0-only", "MPL-2.0")


@dataclass(frozen=True, slots=True)
class SourceFile:
    text: str
    path: str
    language: str


def _identifiers(rng: random.Random, language: str) -> dict[str, str]:
    verb, noun, noun2 = pick(rng, _VERBS), pick(rng, _NOUNS), pick(rng, _NOUNS)
    a, b, c = rng.sample(_NOUNS, 3)
    camel = language in ("javascript",)
    func = f"{verb}{noun.capitalize()}" if camel else f"{verb}_{noun}"
    imperative, third_person = pick(rng, _PURPOSES)
    doc = imperative.format(noun=noun, noun2=noun2)
    return {
        "f": func,
        "F": f"{verb.capitalize()}{noun.capitalize()}",
        "a": a,
        "b": b,
        "c": c,
        "A": a.capitalize(),
        "C": c.capitalize(),
        "t": noun2,
        "T": f"{noun.capitalize()}{noun2.capitalize()}",
        "n": str(pick(rng, (0, 1, 2, 8, 16, 64, 100, 255, 1024))),
        "doc": doc,
        "doc2": third_person.format(noun=noun, noun2=noun2),
    }


def source_file(rng: random.Random, language: str, author: str | None) -> SourceFile:
    """A file of 2-8 functions; with `author` ("Name <email>") a copyright line on top."""
    package = pick(rng, _NOUNS)
    blocks = []
    if author:
        blocks.append(f"{COMMENT[language]} Copyright (c) {between(rng, 2012, 2024)} {author}")
    blocks.append(HEADERS[language].format(pkg=package))
    for _ in range(between(rng, 2, 8)):
        blocks.append(pick(rng, SHAPES[language]).format(**_identifiers(rng, language)))
    module = f"{pick(rng, _VERBS)}_{pick(rng, _NOUNS)}"
    folder = {"python": f"src/{package}", "go": f"internal/{package}"}.get(language, "src")
    path = f"{folder}/{module}.{EXTENSIONS[language]}"
    text = "\n\n".join(block.rstrip("\n") for block in blocks) + "\n"
    return SourceFile(text, path, language)


def repository(rng: random.Random) -> str:
    owner = pick(rng, _ENGLISH.first_names).lower() + str(between(rng, 1, 99))
    return f"{owner}/{pick(rng, _NOUNS)}{pick(rng, _PROJECT_SUFFIXES)}"
