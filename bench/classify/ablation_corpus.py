"""The ablation's corpus: documents with a known quality label, split three ways.

Good (label `good`), English only:
- `python_docs`: the Python 3 documentation installed under /usr/share/doc (Debian's
  python3-doc: library, tutorial, how-to, reference, FAQ, using, extending), turned into text
  by our own `extract` stage, one page per input;
- `man_pages`: manual pages rendered by `man` from /usr/share/man (sections 1-8, English);
- `docstrings`: the docstrings of the Python standard library's modules, classes and
  functions on this machine (/usr/lib/python3.X), joined per file;
- `synth_wiki`, `synth_web`, `synth_forum`: the clean English documents of `mixplane.synth`
  (web pages through `extract`), copies of other documents left out.

Bad (label `bad`): every low-quality kind of `mixplane.synth` in English (or in no language):
`synth_web_spam` (keyword-stuffed pages), `synth_web_low_quality` (error pages, link lists,
lorem ipsum, symbol soup), `synth_forum_spam` and `synth_forum_low_quality` ("+1", "bump").

Long texts are cut at line ends into documents of about 2,000 characters (`chunk_text`).
Each document belongs to a group (its page, manual page, source file, or itself), and whole
groups go to one split (`split_of`): `classifier` (trains the fastText model and the
tokenizer), `pool` (what both selections are drawn from) and `heldout` (never trained on).
"""

from __future__ import annotations

import ast
import random
import sys
import sysconfig
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.filters.technical_prose import manual_pages  # noqa: E402

PYTHON_DOCS = Path("/usr/share/doc/python3-doc/html")
PYTHON_DOCS_PARTS = "{library,tutorial,howto,reference,faq,using,extending}"
MAN_ROOT = Path("/usr/share/man")
SPLITS = {"classifier": 0.25, "pool": 0.60, "heldout": 0.15}
CHUNK_TARGET = 2000
CHUNK_LIMIT = 4000
CHUNK_MIN = 300
# Kinds of synthetic documents that are bad text, by (source, kind).
BAD_KINDS = {
    ("web", "spam"): "synth_web_spam",
    ("web", "low_quality"): "synth_web_low_quality",
    ("forum", "spam"): "synth_forum_spam",
    ("forum", "low_quality"): "synth_forum_low_quality",
}
GOOD_SYNTH = {"web": "synth_web", "wiki": "synth_wiki", "forum": "synth_forum"}
# Languages the synthetic corpus gives its English low-quality pages (lorem ipsum is `la`,
# symbol soup and forum noise have none).
BAD_LANGUAGES = ("en", "la", "und")


@dataclass(frozen=True)
class Labelled:
    """One document: its text, where it came from, its label and the group it splits with."""

    id: str
    text: str
    origin: str
    label: str
    group: str


def chunk_text(
    text: str, target: int = CHUNK_TARGET, limit: int = CHUNK_LIMIT, minimum: int = CHUNK_MIN
) -> list[str]:
    """`text` cut at line ends into pieces of at least `target` characters (a last piece
    shorter than `minimum` is dropped); a line longer than `limit` is cut at spaces first.

    Example:
        >>> chunk_text("a" * 10 + "\\n" + "b" * 10, target=5, minimum=1)
        ['aaaaaaaaaa', 'bbbbbbbbbb']
    """
    lines: list[str] = []
    for line in text.splitlines():
        while len(line) > limit:
            cut = line.rfind(" ", 0, limit)
            cut = cut if cut > 0 else limit
            lines.append(line[:cut])
            line = line[cut:].lstrip()
        lines.append(line)
    pieces, current, size = [], [], 0
    for line in lines:
        current.append(line)
        size += len(line) + 1
        if size >= target:
            pieces.append("\n".join(current).strip())
            current, size = [], 0
    if current:
        pieces.append("\n".join(current).strip())
    return [piece for piece in pieces if len(piece) >= minimum]


def split_of(group: str, seed: int = 0) -> str:
    """The split a group belongs to: a seeded hash of its name against `SPLITS`' shares.

    Example:
        >>> split_of("python_docs:library/json.html")
        'pool'
    """
    point = xxhash.xxh3_64_intdigest(f"{seed}:{group}".encode()) / 2**64
    for name, share in SPLITS.items():
        point -= share
        if point < 0:
            return name
    return name


def chunked(origin: str, group: str, text: str) -> list[Labelled]:
    return [
        Labelled(f"{group}#{index}", piece, origin, "good", group)
        for index, piece in enumerate(chunk_text(text))
    ]


def python_docs(work: Path) -> list[Labelled]:
    """The Python documentation's pages as text, through the `extract` stage."""
    from mixplane import run_pipeline

    if not PYTHON_DOCS.exists():
        raise SystemExit(
            f"{PYTHON_DOCS} is missing: install Debian's python3-doc (apt-get install python3-doc)"
        )
    out = work / "python_docs"
    if not (out / "_stats.json").exists():
        source = {"path": f"{PYTHON_DOCS}/{PYTHON_DOCS_PARTS}/*.html", "source": "python_docs"}
        run_pipeline({"input": [source], "output": str(out), "stages": ["extract"]})
    docs = []
    for part in sorted(out.glob("part-*.parquet")):
        for row in pq.read_table(part, columns=["id", "text"]).to_pylist():
            docs += chunked("python_docs", f"python_docs:{row['id']}", row["text"])
    return docs


def man_pages(count: int, seed: int) -> list[Labelled]:
    """`count` English manual pages, chosen at random (seeded) and rendered by `man`."""
    docs = []
    for name, text in manual_pages(MAN_ROOT, count, random.Random(seed)):
        page = name.removeprefix(f"man:{MAN_ROOT}/")
        docs += chunked("man_pages", f"man_pages:{page}", text)
    return docs


def docstrings() -> list[Labelled]:
    """The standard library's docstrings (at least 150 characters), joined per file."""
    library = Path(sysconfig.get_paths()["stdlib"])
    docs = []
    for path in sorted(library.rglob("*.py")):
        relative = path.relative_to(library)
        if relative.parts[0] in ("test", "site-packages", "lib2to3", "idlelib"):
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        nodes = [tree] + [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        ]
        found = [ast.get_docstring(node) for node in nodes]
        text = "\n\n".join(doc for doc in found if doc and len(doc) >= 150)
        docs += chunked("docstrings", f"docstrings:{relative}", text)
    return docs


def synth_documents(work: Path, count: int, seed: int) -> list[Labelled]:
    """The synthetic corpus's clean English documents and its low-quality kinds, as text."""
    from mixplane import run_pipeline
    from mixplane.synth import generate_corpus

    folder = work / f"synth-{count}-{seed}"
    extracted = folder / "extracted"
    if not (extracted / "_stats.json").exists():
        generate_corpus(str(folder), docs=count, seed=seed, overwrite=True)
        raw = folder / "raw"
        inputs = [
            {"path": str(raw / "web" / "*.warc.gz"), "source": "web"},
            {"path": str(raw / "web_html" / "*.html"), "source": "web"},
            str(raw / "wiki" / "*.jsonl.zst"),
            str(raw / "forum" / "*.parquet"),
        ]
        run_pipeline({"input": inputs, "output": str(extracted), "stages": ["extract"]})
    truth = pq.read_table(folder / "truth" / "documents.parquet").to_pylist()
    labels = {row["id"]: row for row in truth if row["copy_of"] is None}
    docs = []
    for part in sorted(extracted.glob("part-*.parquet")):
        for row in pq.read_table(part, columns=["id", "text", "source"]).to_pylist():
            label = labels.get(row["id"])
            if label is None or not row["text"].strip():
                continue  # a copy of another document, or nothing left after extraction
            source, kind, language = row["source"], label["kind"], label["language"]
            if (source, kind) in BAD_KINDS and language in BAD_LANGUAGES:
                origin, quality = BAD_KINDS[(source, kind)], "bad"
            elif kind == "clean" and language == "en" and source in GOOD_SYNTH:
                origin, quality = GOOD_SYNTH[source], "good"
            else:
                continue  # another language, or clean text with planted PII
            docs.append(Labelled(f"synth:{row['id']}", row["text"], origin, quality, row["id"]))
    return docs


def build(work: Path, synth_docs: int, man_count: int, seed: int) -> list[Labelled]:
    """Every labelled document, kept in `work/labelled.parquet` (built once per settings)."""
    cached = work / f"labelled-{synth_docs}-{man_count}-{seed}.parquet"
    if cached.exists():
        return [Labelled(**row) for row in pq.read_table(cached).to_pylist()]
    work.mkdir(parents=True, exist_ok=True)
    docs = synth_documents(work, synth_docs, seed)
    docs += python_docs(work)
    docs += man_pages(man_count, seed)
    docs += docstrings()
    rows = [asdict(doc) for doc in docs]
    pq.write_table(pa.Table.from_pylist(rows), cached.with_suffix(".tmp"))
    cached.with_suffix(".tmp").rename(cached)
    return docs
