"""What `gopher_quality`'s defaults do to real technical prose, per language.

    .venv/bin/python bench/filters/technical_prose.py [--per-language 40]

The documents are a Debian system's own text, which the stop-word lists were not written
from: manual pages in English and in every translation installed (/usr/share/man, rendered
by `man`), plain-text READMEs (/usr/share/doc), and the translated messages of every
program's catalog (/usr/share/locale/*/LC_MESSAGES/*.mo), joined into 150-word documents.
Each document goes through `langid` and then `gopher_quality` in annotate mode, with the
defaults (stop words of the document's language) and with `language_aware: false` (the
paper's English stop words for every document, as before). Per detected language the
report gives the documents, the share that pass the stop-word rule each way, the share the
defaults keep, and the rules that drop the most. Results go to
bench/results/technical-prose.json.
"""

from __future__ import annotations

import argparse
import gettext
import gzip
import json
import random
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from mixplane.document import Document  # noqa: E402
from mixplane.stages.langid import LanguageId  # noqa: E402
from mixplane.stages.quality.gopher_quality import GopherQuality  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "technical-prose.json"
WORDS_PER_MESSAGE_DOC = 150


def manual_pages(folder: Path, limit: int, rng: random.Random) -> list[tuple[str, str]]:
    pages = sorted(p for p in folder.glob("man*/*") if p.is_file())
    rng.shuffle(pages)
    found = []
    for page in pages[:limit]:
        rendered = subprocess.run(
            ["man", "--nh", "--nj", "-l", str(page)],
            capture_output=True,
            env={"MANWIDTH": "100", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"},
        ).stdout
        text = subprocess.run(["col", "-bx"], input=rendered, capture_output=True).stdout
        found.append((f"man:{page}", text.decode("utf-8", "replace")))
    return found


def readmes(limit: int, rng: random.Random) -> list[tuple[str, str]]:
    paths = sorted(Path("/usr/share/doc").glob("*/README*"))
    rng.shuffle(paths)
    found = []
    for path in paths:
        if path.suffix not in ("", ".gz", ".txt", ".md") or not path.is_file():
            continue
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        found.append((f"doc:{path}", data.decode("utf-8", "replace")))
        if len(found) == limit:
            break
    return found


def catalog_messages(
    locale: Path, min_words: int, skip: tuple[str, ...] = ()
) -> list[tuple[str, str]]:
    """A locale's (source, translation) message pairs of at least `min_words` words, in
    catalog and key order, with the %s and %d placeholders taken out; catalogs whose name
    starts with one of `skip` are left out."""
    pairs = []
    for catalog in sorted(locale.glob("LC_MESSAGES/*.mo")):
        if catalog.name.startswith(skip):
            continue
        try:
            with catalog.open("rb") as handle:
                messages = gettext.GNUTranslations(handle)._catalog
        except Exception:  # a catalog gettext cannot parse (odd plural headers): skipped
            continue
        for key, value in sorted(messages.items(), key=lambda item: str(item[0])):
            if key and isinstance(value, str):
                source = key if isinstance(key, str) else key[0]  # plurals: (msgid, n)
                value = value.replace("%s", "").replace("%d", "")
                if len(value.split()) >= min_words:
                    pairs.append((source, value))
    return pairs


def message_documents(locale: Path, limit: int) -> list[tuple[str, str]]:
    """A locale's translated messages, joined into documents of about 150 words."""
    words: list[str] = []
    for _, value in catalog_messages(locale, min_words=4):
        words += value.split() + ["\n"]
    docs = []
    for start in range(0, len(words), WORDS_PER_MESSAGE_DOC):
        text = " ".join(words[start : start + WORDS_PER_MESSAGE_DOC]).replace(" \n ", "\n")
        docs.append((f"mo:{locale.name}#{len(docs)}", text))
        if len(docs) == limit:
            break
    return docs


def collect(per_language: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    docs = manual_pages(Path("/usr/share/man"), per_language, rng)
    docs += readmes(per_language, rng)
    for folder in sorted(Path("/usr/share/man").iterdir()):
        if folder.is_dir() and not folder.name.startswith("man"):
            docs += manual_pages(folder, per_language, rng)
    for locale in sorted(Path("/usr/share/locale").iterdir()):
        if (locale / "LC_MESSAGES").is_dir():
            docs += message_documents(locale, per_language)
    return docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=40, help="documents per source")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    docs = collect(args.per_language, args.seed)
    langid = LanguageId()
    by_language = GopherQuality(mode="annotate")
    english = GopherQuality(mode="annotate", language_aware=False)
    rows: dict[str, list[dict]] = defaultdict(list)
    batch = [Document(name, text, name.split(":")[0]) for name, text in docs if text.strip()]
    for doc in langid.apply_batch(batch):
        language = doc.metadata["language"]
        new = by_language.apply(Document(doc.id, doc.text, doc.source, dict(doc.metadata)))
        old = english.apply(Document(doc.id, doc.text, doc.source, dict(doc.metadata)))
        rows[language].append(
            {
                "kind": doc.source,
                "stop_words": new.metadata["gopher_stop_words"],
                "skipped": new.metadata["gopher_stop_words_skipped"],
                "english_stop_words": old.metadata["gopher_stop_words"],
                "reason": new.metadata["gopher_quality_reason"],
            }
        )
    report = {}
    for language, found in sorted(rows.items(), key=lambda item: -len(item[1])):
        if len(found) < 10:
            continue
        checked = [r for r in found if not r["skipped"]]
        reasons = Counter(r["reason"] for r in found if r["reason"])
        report[language] = {
            "documents": len(found),
            "kinds": dict(Counter(r["kind"] for r in found)),
            "stop_words_pass": _share([r["stop_words"] >= 2 for r in checked]),
            "stop_words_skipped": len(found) - len(checked),
            "english_stop_words_pass": _share([r["english_stop_words"] >= 2 for r in found]),
            "kept": _share([not r["reason"] for r in found]),
            "drops": {reason: round(n / len(found), 3) for reason, n in reasons.most_common(3)},
        }
    RESULTS.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"{'lang':5} {'docs':>5} {'stop ok':>8} {'en stop ok':>10} {'kept':>6}  top drops")
    for language, entry in report.items():
        stop = "skipped" if entry["stop_words_pass"] is None else f"{entry['stop_words_pass']:.0%}"
        drops = ", ".join(f"{k} {v:.0%}" for k, v in entry["drops"].items())
        print(
            f"{language:5} {entry['documents']:5} {stop:>8} "
            f"{entry['english_stop_words_pass']:>10.0%} {entry['kept']:>6.0%}  {drops}"
        )


def _share(flags: list[bool]) -> float | None:
    return round(sum(flags) / len(flags), 3) if flags else None


if __name__ == "__main__":
    main()
