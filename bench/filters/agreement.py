"""Keep/drop agreement of our quality filters with datatrove's on the same documents.

    .venv/bin/python bench/filters/agreement.py [--docs 6000] [--seed 0] [--words]

Builds the corpus (bench/filters/corpus.py: sections of real HTML documentation from
/usr/share/doc plus synthetic web-like text), runs datatrove's GopherQualityFilter,
GopherRepetitionFilter, C4QualityFilter and FineWebQualityFilter with their defaults in
their own virtual environment (bench/.venvs/datatrove), runs ours with our defaults (the
same thresholds), and prints per filter the agreement and every disagreement.
With --words it also compares our word splitter and sentence counts with datatrove's.
Results go to bench/data/filters/agreement.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench.filters.corpus import build_corpus  # noqa: E402
from bench.peer_venv import ensure_venv  # noqa: E402
from mixplane.document import Document  # noqa: E402
from mixplane.stages.text import analyze, count_sentences, split_words  # noqa: E402

DATA = ROOT / "bench" / "data" / "filters"
PEER_PACKAGES = ["datatrove", "spacy", "regex"]
FILTERS = ("gopher_quality", "gopher_repetition", "c4", "fineweb")

# Our drop reasons under datatrove's names.
REASONS = {
    "too_few_words": "gopher_short_doc",
    "too_many_words": "gopher_long_doc",
    "short_mean_word": "gopher_below_avg_threshold",
    "long_mean_word": "gopher_above_avg_threshold",
    "too_many_hashes": "gopher_too_many_hashes",
    "too_many_ellipses": "gopher_too_many_ellipsis",
    "too_many_bullet_lines": "gopher_too_many_bullets",
    "too_many_ellipsis_lines": "gopher_too_many_end_ellipsis",
    "too_few_alphabetic_words": "gopher_below_alpha_threshold",
    "too_few_stop_words": "gopher_enough_stop_words",
    "duplicate_paragraphs": "dup_para_frac",
    "duplicate_paragraph_chars": "dup_para_char_frac",
    "duplicate_lines": "dup_line_frac",
    "duplicate_line_chars": "dup_line_char_frac",
    **{f"top_{n}gram": f"top_{n}_gram" for n in (2, 3, 4)},
    **{f"duplicate_{n}grams": f"duplicated_{n}_n_grams" for n in range(5, 11)},
    "too_few_punctuated_lines": "line_punct_ratio",
    "too_many_short_lines": "short_line_ratio",
    "too_many_newlines": "list_ratio",
}
FINEWEB_REASONS = {"duplicate_line_chars": "char_dup_ratio"}


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    with open(path) as handle:
        return [json.loads(line) for line in handle]


def run_peer(python: str, mode: str, docs_path: Path, out_path: Path) -> list[dict]:
    runner = Path(__file__).with_name("datatrove_runner.py")
    subprocess.run([python, str(runner), mode, str(docs_path), str(out_path)], check=True)
    return read_jsonl(out_path)


def our_decisions(docs: list[dict], options: dict) -> list[dict]:
    from mixplane.stages.build import build_stage

    stages = {name: build_stage(name, options) for name in FILTERS}
    rows = []
    for doc in docs:
        row = {"id": doc["id"]}
        for name, stage in stages.items():
            result = stage.apply(Document(doc["id"], doc["text"], "bench"))
            if isinstance(result, Document):
                row[name] = {"keep": True, "reason": None}
            else:
                mapping = FINEWEB_REASONS if name == "fineweb" else {}
                reason = mapping.get(result.reason) or REASONS.get(result.reason, result.reason)
                row[name] = {"keep": False, "reason": reason}
        rows.append(row)
    return rows


def category(doc: dict) -> str:
    """Why a document might legitimately be judged differently."""
    if analyze(doc["text"]).unspaced:
        return "unspaced script (split into characters by design)"
    return "other"


def compare(docs, ours, theirs) -> dict:
    by_id = {doc["id"]: doc for doc in docs}
    report = {}
    for name in FILTERS:
        agree = reason_agree = both_drop = 0
        disagreements = []
        for mine, peer in zip(ours, theirs, strict=True):
            a, b = mine[name], peer[name]
            if a["keep"] == b["keep"]:
                agree += 1
                if not a["keep"]:
                    both_drop += 1
                    reason_agree += a["reason"] == b["reason"]
            else:
                doc = by_id[mine["id"]]
                disagreements.append(
                    {
                        "id": mine["id"],
                        "ours": a,
                        "datatrove": b,
                        "category": category(doc),
                        "text": doc["text"][:300],
                    }
                )
        categories = Counter(item["category"] for item in disagreements)
        report[name] = {
            "documents": len(docs),
            "agree": agree,
            "agreement": agree / len(docs),
            "same_reason_when_both_drop": reason_agree / both_drop if both_drop else 1.0,
            "kept_by_ours": sum(row[name]["keep"] for row in ours),
            "kept_by_datatrove": sum(row[name]["keep"] for row in theirs),
            "disagreement_categories": dict(categories),
            "disagreements": disagreements,
        }
    return report


def compare_words(docs, peer_rows) -> dict:
    token_docs = sentence_lines = sentence_agree = 0
    for doc, row in zip(docs, peer_rows, strict=True):
        token_docs += split_words(doc["text"]) == row["words"]
        lines = [line.strip() for line in doc["text"].splitlines() if line.strip()]
        for line, count in zip(lines, row["sentences"], strict=True):
            sentence_lines += 1
            sentence_agree += count_sentences(line) == count
    return {
        "documents_with_identical_words": token_docs / len(docs),
        "lines_with_same_sentence_count": sentence_agree / max(1, sentence_lines),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--words", action="store_true", help="also compare word splitting")
    parser.add_argument("--reuse", action="store_true", help="reuse datatrove's last decisions")
    args = parser.parse_args()

    docs = build_corpus(args.docs, seed=args.seed)
    docs_path = DATA / "agreement-docs.jsonl"
    write_jsonl(docs_path, docs)
    python = ensure_venv("datatrove", PEER_PACKAGES)
    peer_path = DATA / "agreement-datatrove.jsonl"
    if args.reuse and peer_path.exists():
        theirs = read_jsonl(peer_path)
    else:
        theirs = run_peer(python, "filters", docs_path, peer_path)
    report = {
        "filters": compare(docs, our_decisions(docs, {}), theirs),
        # Splitting every text like English, as datatrove's English tokenizer does.
        "filters_language_blind": compare(
            docs, our_decisions(docs, {"language_aware": False}), theirs
        ),
    }
    if args.words:
        words = run_peer(python, "words", docs_path, DATA / "agreement-words.jsonl")
        report["words"] = compare_words(docs, words)
    origins = Counter(doc["origin"] for doc in docs)
    report["corpus"] = dict(origins)
    (DATA / "agreement.json").write_text(json.dumps(report, indent=2, ensure_ascii=False))

    print(f"{len(docs)} documents ({', '.join(f'{n} {k}' for k, n in origins.items())})\n")
    print("| filter | ours | agreement | kept (ours) | kept (datatrove) | same reason | "
          "differences |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for setting, label in (
        ("filters", "default"),
        ("filters_language_blind", "language_aware: false"),
    ):
        for name, row in report[setting].items():
            cats = row["disagreement_categories"]
            text = "; ".join(f"{n} {c}" for c, n in cats.items()) or "-"
            print(
                f"| {name} | {label} | {row['agreement']:.2%} | {row['kept_by_ours']} | "
                f"{row['kept_by_datatrove']} | {row['same_reason_when_both_drop']:.2%} | {text} |"
            )
    if "words" in report:
        print(f"\nword splitting: {report['words']}")


if __name__ == "__main__":
    main()
