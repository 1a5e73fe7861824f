"""How many real paragraphs of each language pass the Gopher stop-word rule with its list.

    .venv/bin/python bench/filters/stop_word_coverage.py [--per-language 200] [--codes am ha]

The text is the translated messages of a Debian system's own catalogs
(/usr/share/locale/LOCALE/LC_MESSAGES/*.mo), which the lists were not written from, in the
locale folder named by the language's code (or by the names in `LOCALES`). Two samples per
language: single messages of at least 10 words (a sentence or two: harsh, since user
interface strings are terse), and paragraphs of at least 50 words (Gopher's minimum
document), consecutive messages of one catalog joined. For each language with a list in
`stop_words.STOP_WORDS` and text here, the report gives how many of each, the share of
paragraphs `langid` labels with that language, the share with at least 2 of its stop words
(the rule as Gopher states it, `gopher_quality`'s default), and the share of the catalogs'
English source paragraphs that would pass with the same list (a list of English words would
let English through under that label). Languages with a list but no text here are listed.
Results go to bench/results/stop-word-coverage.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from technical_prose import catalog_messages  # noqa: E402

from mixplane.document import Document  # noqa: E402
from mixplane.stages.langid import LanguageId  # noqa: E402
from mixplane.stages.quality.stop_words import STOP_WORDS  # noqa: E402
from mixplane.stages.text import analyze  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "stop-word-coverage.json"
LOCALE_ROOT = Path("/usr/share/locale")
MIN_STOP_WORDS = 2
# Catalogs of country, language and currency names (iso-codes): names, not sentences.
NAME_CATALOGS = ("iso_",)
# Locale folders for codes that name them differently.
LOCALES = {
    "gom": ["kok"],
    "ku": ["ku", "kmr", "ckb"],
    "qu": ["qu", "quz"],
    "no": ["nb", "no"],
    "sr": ["sr", "sr@latin"],
    "uz": ["uz", "uz@cyrillic"],
    "zh": ["zh_CN", "zh_TW", "zh_HK"],
    "pt": ["pt", "pt_BR"],
}


def pairs_of(locales: list[str], min_words: int) -> list[tuple[str, str]]:
    return [
        pair
        for name in locales
        if (LOCALE_ROOT / name / "LC_MESSAGES").is_dir()
        for pair in catalog_messages(LOCALE_ROOT / name, min_words, skip=NAME_CATALOGS)
    ]


def joined(texts: list[str], min_words: int) -> list[str]:
    """Consecutive texts joined into paragraphs of at least `min_words` words."""
    found, current, words = [], [], 0
    for text in texts:
        current.append(text)
        words += len(text.split())
        if words >= min_words:
            found.append("\n".join(current))
            current, words = [], 0
    return found


def sample(texts: list[str], limit: int, seed: int) -> list[str]:
    texts = sorted(set(texts))
    random.Random(seed).shuffle(texts)
    return texts[:limit]


def stop_words_in(text: str, code: str) -> int:
    return len(analyze(text, code).word_set & STOP_WORDS[code])


def measure(code: str, per_language: int, seed: int, langid: LanguageId) -> dict | None:
    """The shares for one language's text on this machine, or None if there is none."""
    values = [value for _, value in pairs_of(LOCALES.get(code, [code]), 4)]
    messages = sample([v for v in values if len(v.split()) >= 10], per_language, seed)
    texts = sample(joined(values, 50), per_language, seed)
    if not texts:
        return None
    batch = [Document(f"{code}#{i}", text, code) for i, text in enumerate(texts)]
    labels = [doc.metadata["language"] for doc in langid.apply_batch(batch)]
    counts = [stop_words_in(text, code) for text in texts]
    return {
        "messages": len(messages),
        "messages_pass": _share([stop_words_in(t, code) >= MIN_STOP_WORDS for t in messages]),
        "paragraphs": len(texts),
        "labelled_as_language": _share([label == code for label in labels]),
        "pass": _share([n >= MIN_STOP_WORDS for n in counts]),
        "median_stop_words": sorted(counts)[len(counts) // 2],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=200, help="paragraphs per language")
    parser.add_argument("--codes", nargs="*", default=sorted(STOP_WORDS), help="language codes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sources = [source for source, _ in pairs_of(["de", "fr", "es"], 4)]
    english = sample(joined(sources, 50), 1000, args.seed)
    langid = LanguageId()
    report: dict[str, dict] = {}
    for code in args.codes:
        english_pass = _share([stop_words_in(t, code) >= MIN_STOP_WORDS for t in english])
        report[code] = {**(measure(code, args.per_language, args.seed, langid) or {}),
                        "english_pass": english_pass}  # fmt: skip
    without_text = [code for code, entry in report.items() if "pass" not in entry]
    summary = {"languages": report, "without_text": without_text, "english": len(english)}
    RESULTS.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    header = ("lang", "msgs", "pass", "paras", "langid", "pass", "median", "en")
    print("{:5} {:>5} {:>5} {:>5} {:>6} {:>5} {:>6} {:>4}".format(*header))
    for code, entry in report.items():
        if code in without_text:
            continue
        print(
            f"{code:5} {entry['messages']:5} {_percent(entry['messages_pass']):>5} "
            f"{entry['paragraphs']:5} {_percent(entry['labelled_as_language']):>6} "
            f"{_percent(entry['pass']):>5} {entry['median_stop_words']:>6} "
            f"{_percent(entry['english_pass']):>4}"
        )
    print(f"no text here ({len(without_text)}; English paragraphs passing with the list):")
    print(", ".join(f"{c} {_percent(report[c]['english_pass'])}" for c in without_text))


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def _share(flags: list[bool]) -> float | None:
    return round(sum(flags) / len(flags), 3) if flags else None


if __name__ == "__main__":
    main()
