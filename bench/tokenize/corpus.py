"""The documents the tokenize benchmark runs on: synthetic multilingual web-like text.

Words come from per-language lexicons built from syllables (Latin script with and without
diacritics, Cyrillic), drawn with Zipf frequencies, plus Chinese passages, digits, URLs,
punctuation and emoji, so a byte-level BPE sees the mix of scripts a web corpus has.
Deterministic: the same seed gives the same files.

Example:
    write_corpus(Path("bench/data/tokenize/20mb"), megabytes=20, files=2)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SYLLABLES = {
    "en": "th er on an re he in ed nd ha at en es of or nt ea ti to it st io le is ou ar as de",
    "de": "sch ei ch en er ge be un ie st an ü ä ö ß te ung lich ver zu au ei der die das",
    "fr": "le la les de re ou on en é è ê ai qu ent ion tion ç eu au ette que ain",
    "ru": "про ва ни ко то ра ст но ли ен ов ан ре на ть ся по ка ми же да ет",
}
HAN = np.array([chr(c) for c in range(0x4E00, 0x4E00 + 3000)])
EMOJI = ["😀", "🎉", "👍🏽", "🚀", "❤️", "👩‍💻", "🇩🇪", "✨", "🤖", "📚"]
LANGUAGES = ["en", "en", "en", "de", "fr", "ru", "zh"]


def _lexicon(rng: np.random.Generator, language: str, size: int) -> np.ndarray:
    syllables = SYLLABLES[language].split()
    lengths = rng.integers(1, 5, size)
    return np.array(["".join(rng.choice(syllables, n)) for n in lengths])


def _document(rng: np.random.Generator, language: str, lexicons: dict, cumulative) -> str:
    if language == "zh":
        lengths = rng.integers(5, 30, int(rng.integers(5, 60)))
        characters = HAN[rng.integers(0, len(HAN), int(lengths.sum()))]
        bounds = np.cumsum(lengths)
        return "".join(
            "".join(characters[b - n : b]) + "。" for n, b in zip(lengths, bounds, strict=True)
        )
    words = lexicons[language]
    lengths = rng.integers(4, 25, int(rng.integers(5, 80)))
    # Zipf draws by inverse transform: one uniform per word, one searchsorted per document.
    drawn = words[np.searchsorted(cumulative, rng.random(int(lengths.sum())))].tolist()
    rolls = rng.random(len(lengths))
    ends = rng.choice([".", ".", ".", "!", "?", ":"], len(lengths))
    sentences, start = [], 0
    for n, roll, end in zip(lengths.tolist(), rolls.tolist(), ends.tolist(), strict=True):
        chosen = drawn[start : start + n]
        start += n
        chosen[0] = chosen[0].capitalize()
        if roll < 0.05:
            chosen.append(str(int(rng.integers(0, 100_000))))
        elif roll < 0.08:
            chosen.append(f"https://www.{chosen[1]}.com/{chosen[-1]}")
        elif roll < 0.11:
            chosen.append(str(rng.choice(EMOJI)))
        sentences.append(" ".join(chosen) + end)
    paragraphs = [" ".join(sentences[i : i + 6]) for i in range(0, len(sentences), 6)]
    return "\n\n".join(paragraphs)


def write_corpus(folder: Path, megabytes: float, files: int, seed: int = 0) -> dict:
    """Write `files` Parquet parts (columns id, text, source, language) of about `megabytes`
    of UTF-8 text in total; return their document count and text bytes."""
    rng = np.random.default_rng(seed)
    size = 30_000
    lexicons = {language: _lexicon(rng, language, size) for language in SYLLABLES}
    weights = 1 / np.arange(1, size + 1)
    cumulative = np.cumsum(weights / weights.sum())
    cumulative[-1] = 1.0
    folder.mkdir(parents=True, exist_ok=True)
    target = megabytes * 1e6 / files
    documents, text_bytes = 0, 0
    for part in range(files):
        ids, texts, languages, written = [], [], [], 0
        while written < target:
            language = str(rng.choice(LANGUAGES))
            text = _document(rng, language, lexicons, cumulative)
            ids.append(f"{part}-{len(ids)}")
            texts.append(text)
            languages.append(language)
            written += len(text.encode())
        table = pa.table(
            {"id": ids, "text": texts, "source": ["web"] * len(ids), "language": languages}
        )
        pq.write_table(table, folder / f"part-{part:05d}.parquet", row_group_size=4096)
        documents += len(ids)
        text_bytes += written
    return {"documents": documents, "text_bytes": text_bytes}
