"""The documents the filter benchmarks run on: real HTML pages from this machine's Debian
documentation, cut into sections, plus synthetic web-like text.

HTML comes from `/usr/share/doc` (the script installs `python3-doc` with apt when it is
missing and it runs as root). Half of the synthetic text comes from `mixplane.synth` (its raw
corpus of web pages, WARC records, wiki, forum and code files, turned into text by our own
pipeline with the `extract` stage), the other half from the small generator below, which
mixes the patterns the filters look for: clean prose, boilerplate, lists, repeated lines,
code, "lorem ipsum", very short lines, Chinese/Japanese/Arabic/Hebrew text and emoji.

Example:
    docs = build_corpus(6000, seed=0)   # list of {"id", "text", "origin"}
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

DOC_ROOT = Path("/usr/share/doc")
_BLOCK = {"p", "div", "li", "pre", "tr", "br", "dt", "dd", "table", "ul", "ol", "section",
          "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "title", "article"}  # fmt: skip
_SKIP = {"script", "style", "nav", "footer", "head", "noscript", "form", "button"}
_SECTION = {"h1", "h2", "h3"}


class _SectionParser(HTMLParser):
    """Collects visible text, with a new section at each h1-h3 heading."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[list[str]] = [[]]
        self.skipping = 0
        self.in_pre = 0

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        if tag in _SKIP or "related" in classes or "sphinxsidebar" in classes:
            self.skipping += 1
        elif tag in _SECTION and not self.skipping:
            self.sections.append([])
        if tag == "pre":
            self.in_pre += 1
        if tag in _BLOCK:
            self.sections[-1].append("\n")

    def handle_endtag(self, tag):
        if tag in _SKIP or tag == "div" and self.skipping and tag not in _BLOCK:
            self.skipping = max(0, self.skipping - 1)
        if tag == "pre":
            self.in_pre = max(0, self.in_pre - 1)
        if tag in _BLOCK:
            self.sections[-1].append("\n")

    def handle_data(self, data):
        if self.skipping:
            return
        self.sections[-1].append(data if self.in_pre else re.sub(r"\s+", " ", data))


def html_sections(html: str) -> list[str]:
    """The text of each section of an HTML page, lines stripped, blank runs collapsed."""
    parser = _SectionParser()
    parser.feed(html)
    texts = []
    for parts in parser.sections:
        lines = [line.strip() for line in "".join(parts).split("\n")]
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
        if text:
            texts.append(text)
    return texts


def ensure_html_docs() -> None:
    """Install Python's HTML documentation with apt when it is missing (needs root)."""
    if any(DOC_ROOT.glob("python3*/html/library")):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "python3-doc"], check=False, env=env)


def html_documents(limit: int) -> list[dict]:
    """Up to `limit` section documents from the HTML files under /usr/share/doc."""
    ensure_html_docs()
    files = sorted({path.resolve() for path in DOC_ROOT.rglob("*.html")})
    docs = []
    for path in files:
        try:
            html = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for index, text in enumerate(html_sections(html)):
            docs.append({"id": f"{path}#{index}", "text": text, "origin": "html"})
            if len(docs) >= limit:
                return docs
    return docs


def build_corpus(size: int, seed: int = 0, html_share: float = 0.6) -> list[dict]:
    """`size` documents: real HTML sections first (up to `html_share`), then synthetic."""
    docs = html_documents(int(size * html_share))
    remaining = size - len(docs)
    docs.extend(mixplane_synth_documents(remaining // 2, seed))
    docs.extend(synthetic_documents(size - len(docs), seed))
    return docs


def mixplane_synth_documents(count: int, seed: int) -> list[dict]:
    """`count` documents of mixplane's synthetic raw corpus, as text (empty if unavailable)."""
    try:
        from mixplane import run_pipeline
        from mixplane.synth import generate_corpus
    except ImportError:
        return []
    import pyarrow.parquet as pq

    folder = Path(__file__).resolve().parents[1] / "data" / "filters" / f"synth-{seed}-{count}"
    extracted = folder / "extracted"
    if not (extracted / "_stats.json").exists():
        generate_corpus(str(folder), docs=count, seed=seed, overwrite=True)
        shutil.rmtree(extracted, ignore_errors=True)
        run_pipeline(
            {
                "input": str(folder / "raw" / "*" / "*"),
                "output": str(extracted),
                "stages": ["extract"],
            }
        )
    docs = []
    for part in sorted(extracted.glob("part-*.parquet")):
        for row in pq.read_table(part, columns=["id", "text"]).to_pylist():
            docs.append(
                {"id": f"synth/{row['id']}", "text": row["text"], "origin": "mixplane.synth"}
            )
    return docs[:count]


def synthetic_documents(count: int, seed: int) -> list[dict]:
    """`count` web-like documents, deterministic for a seed."""
    rng = random.Random(seed)
    return [
        {"id": f"synthetic/{i}", "text": _synthetic_text(rng), "origin": "synthetic"}
        for i in range(count)
    ]


_ENGLISH = (
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when if "
    "data model system people time year world government company market research water city "
    "history music school family health policy energy network science language student team "
    "could should might will can must provide include develop increase support create report "
    "important different public social national local large small early recent general human "
    "however although because therefore while during between against without through under"
)
_DEUTSCH = (
    "der die und in den von zu das mit sich des auf für ist im dem nicht ein eine als "
    "auch es an werden aus er hat dass sie nach wird bei einer um am sind noch wie"
)
_CHINESE = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到"
    "作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经"
)
_JAPANESE = (
    "これはテストの文章ですが日本語で書かれた本当に"
    "ながいテキストをつくりますそしてわたしたちはデータを"
)
_ARABIC_TEXT = "في من على إلى أن هذا التي الذي عن مع هذه كان لا ما هو بين كل بعد عند"
_HEBREW_TEXT = "של את על זה לא הוא עם כי גם היא אני יש מה כל אבל או רק"
_WORDS = _ENGLISH.split()
_GERMAN = _DEUTSCH.split()
_ARABIC = _ARABIC_TEXT.split()
_HEBREW = _HEBREW_TEXT.split()
_BOILERPLATE = [
    "Home | About | Contact | Privacy Policy",
    "This website uses cookies to improve your experience.",
    "Please enable JavaScript to view the comments.",
    "Copyright 2024 All rights reserved",
    "Share on Facebook",
    "Read more...",
    "Terms of use apply.",
]
_CODE = [
    "def main(argv):",
    "    for item in items: print(item)",
    "if (x > 0) { return x; }",
    "#include <stdio.h>",
    "    return {'key': value}",
]


def _sentence(rng: random.Random, words: list[str]) -> str:
    body = " ".join(rng.choice(words) for _ in range(rng.randint(4, 22)))
    ending = rng.choice([".", ".", ".", "?", "!", "...", "", ":"])
    extras = rng.random()
    if extras < 0.1:
        body += f" ({rng.randint(1, 999)}%)"
    elif extras < 0.15:
        body += " #" + rng.choice(words)
    elif extras < 0.18:
        body = "don't " + body + ", isn't it"
    return body[0].upper() + body[1:] + ending


def _paragraph(rng: random.Random, words: list[str]) -> str:
    return " ".join(_sentence(rng, words) for _ in range(rng.randint(1, 6)))


def _synthetic_text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.45:
        parts = [_paragraph(rng, _WORDS) for _ in range(rng.randint(1, 12))]
    elif kind < 0.55:
        parts = [f"- {_sentence(rng, _WORDS)}" for _ in range(rng.randint(3, 30))]
    elif kind < 0.63:
        line = _sentence(rng, _WORDS)
        parts = [line if rng.random() < 0.5 else _sentence(rng, _WORDS) for _ in range(20)]
    elif kind < 0.68:
        parts = [rng.choice(_CODE) for _ in range(rng.randint(5, 40))]
    elif kind < 0.72:
        parts = [_paragraph(rng, _GERMAN) for _ in range(rng.randint(2, 8))]
    elif kind < 0.76:
        parts = ["".join(rng.choice(_CHINESE) for _ in range(rng.randint(20, 200))) + "。"
                 for _ in range(rng.randint(2, 10))]  # fmt: skip
    elif kind < 0.79:
        parts = ["".join(rng.choice(_JAPANESE) for _ in range(rng.randint(20, 120))) + "。"
                 for _ in range(rng.randint(2, 8))]  # fmt: skip
    elif kind < 0.82:
        vocabulary = rng.choice([_ARABIC, _HEBREW])
        parts = [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(8, 40))) + "."
                 for _ in range(rng.randint(2, 8))]  # fmt: skip
    elif kind < 0.86:
        parts = [rng.choice(_BOILERPLATE) for _ in range(rng.randint(3, 15))]
        parts += [_paragraph(rng, _WORDS) for _ in range(rng.randint(0, 4))]
    elif kind < 0.89:
        parts = [_paragraph(rng, _WORDS) for _ in range(rng.randint(2, 6))]
        parts.insert(1, "Lorem ipsum dolor sit amet, consectetur adipiscing elit.")
    elif kind < 0.92:
        parts = [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4)))
                 for _ in range(rng.randint(10, 60))]  # fmt: skip
    elif kind < 0.95:
        emoji = "😀🎉🔥👍❤️✨🚀"
        parts = [
            _sentence(rng, _WORDS) + " " + rng.choice(emoji) for _ in range(rng.randint(5, 25))
        ]
    elif kind < 0.97:
        parts = [_paragraph(rng, _WORDS) + " " + "x" * rng.randint(500, 3000)]
    else:
        parts = [_paragraph(rng, _WORDS)] * rng.randint(2, 5) + [_paragraph(rng, _WORDS)]
    separator = rng.choice(["\n", "\n\n", "\n"])
    return separator.join(parts)
