"""Near-duplicate audio: `dedup_audio`'s recall and false removals against planted copies.

Two corpora, each run through `decode_audio`, `audio_quality` and `dedup_audio` by
`mixplane process`:

- synthetic: `mixplane synth --audio` (espeak-ng speech in six languages), whose truth names
  every planted copy (re-encoded, trimmed, gain-changed, resampled);
- real: the sound files of four Debian packages (freedesktop and deepin sound themes,
  alsa-utils' spoken channel names, sound-icons), fetched with `apt-get download` and
  unpacked under bench/data/sounds/, each with copies made here: re-encoded (MP3, or Ogg
  Vorbis at a rate MP3 does not take), a trim of 5 to 10% at the start and 7.5% at the end,
  6 dB quieter, and resampled to 22.05 kHz.

The peer, on the same clips (those `decode_audio` and `audio_quality` kept, as the files
they came in): Chromaprint's `fpcalc -raw`, every pair compared by bit error rate at its
best alignment, clusters by union-find (bench/audio/chromaprint.py), with a sweep of
thresholds. Both run as child processes, measured with their whole process tree (fpcalc's
processes included) by bench/measure.py.

Recall: the share of planted copies removed. Removals across groups: clips removed as a
duplicate of a clip of another group; on the synthetic corpus these are false removals; on
the real one they are listed by file name, since sound themes hold the same sound under
several names.

Run:
    PYTHONPATH=src python -m bench.audio.dedup --samples 600 [--only synthetic|real]
        [--peer chromaprint|none]
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import soundfile
import yaml

from bench.audio import chromaprint
from bench.measure import measure as measure_process
from mixplane.document import Drop
from mixplane.io.audio_codec import decode, encode, probe
from mixplane.stages.audio.resample import resample
from mixplane.synth.audio import generate_audio_corpus, read_audio_truth

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "sounds"
RESULTS = ROOT / "bench" / "results" / "audio-dedup.json"
PACKAGES = ("sound-theme-freedesktop", "deepin-sound-theme", "alsa-utils", "sound-icons")
MP3_RATES = (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)
SUFFIXES = (".wav", ".oga", ".ogg", ".flac", ".mp3")
STAGES = [
    {"decode_audio": {}},
    {"audio_quality": {"min_duration": 0.05, "max_silence_ratio": 0.95}},
    {"dedup_audio": {}},
]


def gather_sounds(root: Path = DATA) -> list[Path]:
    """The packages' sound files (downloaded and unpacked once), sorted by path."""
    unpacked = root / "unpacked"
    if not (root / "unpacked.done").exists():
        debs = root / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", "-q", *PACKAGES], cwd=debs, check=True)
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
        (root / "unpacked.done").write_text("")
    return sorted(p for p in unpacked.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file())


def copies_of(samples: np.ndarray, rate: int, rng: np.random.Generator) -> dict[str, bytes]:
    """The planted copies of one real sound, by transform."""
    cut = len(samples) // 10
    trimmed = samples[int(rng.integers(cut // 2, cut + 1)) : len(samples) - int(cut * 0.75)]
    lossy = io.BytesIO()
    if rate in MP3_RATES:
        soundfile.write(lossy, samples, rate, format="MP3", subtype="MPEG_LAYER_III")
        name = "reencode.mp3"
    else:  # MP3 takes none of the other rates: Vorbis then
        soundfile.write(lossy, samples, rate, format="OGG", subtype="VORBIS")
        name = "reencode.ogg"
    return {
        name: lossy.getvalue(),
        "trim.flac": encode(trimmed, rate, "flac"),
        "gain.flac": encode(samples * 10 ** (-6 / 20), rate, "flac"),
        "resample.flac": encode(resample(samples, rate, 22050), 22050, "flac"),
    }


def write_real_corpus(
    out: Path, sounds: list[Path], seed: int = 0
) -> tuple[dict[str, str], dict[str, float]]:
    """A WebDataset tar of the sounds and their copies; returns {doc_id: group} and each
    group's duration in seconds."""
    rng = np.random.default_rng(seed)
    groups: dict[str, str] = {}
    durations: dict[str, float] = {}
    seen: dict[bytes, str] = {}
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out / "real.tar", "w") as tar:
        for number, path in enumerate(sounds):
            data = path.read_bytes()
            info = probe(data)
            samples = info if isinstance(info, Drop) else decode(data, info)
            if isinstance(samples, Drop):
                continue
            key = f"{number:05d}"
            digest = np.round(samples, 4).tobytes()
            group = seen.setdefault(digest, key)  # byte-identical sounds are one group
            durations[group] = len(samples) / info.sample_rate
            members = {f"{key}{path.suffix.lower()}": data}
            for name, copy in copies_of(samples, info.sample_rate, rng).items():
                members[f"{key}_{name.split('.')[0]}.{name.split('.')[1]}"] = copy
            for name, payload in members.items():
                member = tarfile.TarInfo(name)
                member.size = len(payload)
                tar.addfile(member, io.BytesIO(payload))
                groups[f"real.tar/{name.split('.')[0]}"] = group
    return groups, durations


def removals(output: Path) -> tuple[dict[str, str], dict[str, str]]:
    """{removed id: survivor} of a processed corpus, and {id: reason} of its other
    exclusions."""
    excluded = pq.read_table(output / "_excluded", columns=["id", "reason", "detail"])
    removed, other = {}, {}
    for row in excluded.to_pylist():
        if row["reason"] == "duplicate":
            removed[row["id"]] = json.loads(row["detail"])["duplicate_of"]
        else:
            other[row["id"]] = row["reason"]
    return removed, other


def measure(groups: dict[str, str], removed: dict[str, str]) -> dict:
    """Recall and removals across groups.

    Recall: planted copies removed (as duplicates of any clip). Across groups: clips removed
    as a duplicate of a clip of another group, with the pair, since a corpus may hold the
    same sound twice under two names (the real corpus does); on the synthetic corpus,
    whose truth is complete, every one is a false removal.
    """
    members: dict[str, list[str]] = {}
    for doc, group in groups.items():
        members.setdefault(group, []).append(doc)
    planted = [doc for docs in members.values() for doc in docs[1:]]
    across = sorted(
        (doc, survivor)
        for doc, survivor in removed.items()
        if doc in groups and groups.get(survivor, survivor) != groups[doc]
    )
    return {
        "clips": len(groups),
        "planted_copies": len(planted),
        "recall": round(sum(doc in removed for doc in planted) / max(1, len(planted)), 4),
        "removed_across_groups": len(across),
        "across_rate": round(len(across) / max(1, len(groups)), 4),
        "across_pairs": [f"{doc} -> {survivor}" for doc, survivor in across],
    }


def run_ours(inputs: str, out: Path) -> tuple[dict[str, str], dict[str, str], dict]:
    """`mixplane process` over the corpus in a child process: its removals, its other
    exclusions, and its wall and CPU seconds."""
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    config = out.parent / f"{out.name}.yaml"
    config.write_text(yaml.safe_dump({"input": inputs, "output": str(out), "stages": STAGES}))
    done = measure_process([sys.executable, "-m", "mixplane", "process", str(config), "--json"],
                           tree_cpu=True)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"mixplane process failed:\n{done.stderr[-3000:]}")
    removed, other = removals(out)
    stats = json.loads((out / "_stats.json").read_text())
    cost = {
        "seconds": round(done.seconds, 1),
        "cpu_seconds": round(done.cpu_seconds, 1),
        "stage_seconds": {k: round(v, 1) for k, v in stats["seconds"].items()},
    }
    return removed, other, cost


def clips_reaching_dedup(tars: list[Path], excluded: set[str], folder: Path) -> list[dict]:
    """The audio members of the tars that `decode_audio` and `audio_quality` kept, written
    out as the files they were (fpcalc reads files), as [{id, path}]."""
    shutil.rmtree(folder, ignore_errors=True)
    clips = []
    for path in tars:
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                stem, _, suffix = member.name.rpartition(".")
                doc = f"{path.name}/{stem}"
                if f".{suffix.lower()}" not in SUFFIXES or doc in excluded:
                    continue
                target = folder / path.stem / member.name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
                clips.append({"id": doc, "path": str(target)})
    return clips


def run_peer(clips: list[dict], work: Path) -> dict:
    """The Chromaprint dedup in a child process: its result, wall and CPU seconds."""
    listing, answer = work / "clips.json", work / "chromaprint.json"
    listing.write_text(json.dumps(clips))
    command = [sys.executable, "-m", "bench.audio.chromaprint", str(listing), str(answer)]
    done = measure_process(command, cwd=str(ROOT), tree_cpu=True)
    if done.returncode != 0:
        raise SystemExit(f"the chromaprint dedup failed:\n{done.stderr[-3000:]}")
    result = json.loads(answer.read_text())
    result["seconds"] = round(done.seconds, 1)
    result["cpu_seconds"] = round(done.cpu_seconds, 1)
    return result


def peer_report(peer: dict, groups: dict[str, str], judge) -> dict:
    """The peer's figures at its threshold, and its sweep of thresholds; `judge(removed)`
    gives the corpus's own figures (by transform, by duration) from a set of removals."""
    ids = sorted({doc for pair in peer["pairs"] for doc in pair[:2]})
    report = {"clips_compared": peer["clips"]}
    for key in ("fingerprinted", "no_fingerprint", "items_median", "threshold", "seconds",
                "cpu_seconds", "fingerprint_seconds", "compare_seconds"):  # fmt: skip
        report[key] = peer[key]
    report |= measure(groups, peer["removed"]) | judge(peer["removed"])
    report["sweep"] = {}
    for threshold in chromaprint.SWEEP:
        removed = chromaprint.removals(ids, [tuple(p) for p in peer["pairs"]], threshold)
        measured = measure(groups, removed)
        report["sweep"][str(threshold)] = {
            "recall": measured["recall"],
            "removed_across_groups": measured["removed_across_groups"],
            "by_transform": judge(removed)["by_transform"],
        }
    return report


def synthetic(work: Path, samples: int, seed: int, peer: bool) -> dict:
    corpus = work / "synthetic"
    generate_audio_corpus(str(corpus), samples, seed, overwrite=True)
    truth = read_audio_truth(str(corpus))
    by_sample = dict(zip(truth.sample_id, truth.doc_id, strict=True))
    groups = {}
    for doc, kind, original in zip(truth.doc_id, truth.kind, truth.duplicate_of, strict=True):
        if kind != "bad":
            groups[doc] = by_sample[original] if kind == "duplicate" else doc
    copies = truth[truth.kind == "duplicate"]

    def judge(removed: dict[str, str]) -> dict:
        return {"by_transform": {
            transform: f"{sum(doc in removed for doc in docs)}/{len(docs)}"
            for transform, docs in copies.groupby("transform").doc_id
        }}  # fmt: skip

    webdataset = corpus / "raw" / "webdataset"
    removed, other, cost = run_ours(str(webdataset), work / "synthetic-out")
    result = measure(groups, removed) | judge(removed) | cost
    result["other_exclusions"] = dict(sorted(Counter(other.values()).items()))
    if peer:
        tars = sorted(webdataset.glob("*.tar"))
        clips = clips_reaching_dedup(tars, set(other), work / "chromaprint" / "synthetic")
        found = run_peer(clips, work / "chromaprint")
        result["chromaprint"] = peer_report(found, groups, judge)
    return result


def real(work: Path, peer: bool) -> dict:
    sounds = gather_sounds()
    corpus = work / "real"
    groups, durations = write_real_corpus(corpus, sounds)
    copies: dict[str, list[str]] = {}
    for doc in groups:
        if "_" in doc:
            copies.setdefault(doc.rsplit("_", 1)[1], []).append(doc)
    spans = {"at_least_1s": lambda g: durations[g] >= 1.0, "under_1s": lambda g: durations[g] < 1.0}

    def judge(removed: dict[str, str]) -> dict:
        result = {"by_transform": {
            name: f"{sum(doc in removed for doc in docs)}/{len(docs)}"
            for name, docs in sorted(copies.items())
        }}  # fmt: skip
        for label, keep in spans.items():
            part = {doc: group for doc, group in groups.items() if keep(group)}
            measured = measure(part, removed)
            result[label] = {key: measured[key] for key in ("clips", "planted_copies", "recall")}
        return result

    names = {f"{number:05d}": path.relative_to(DATA / "unpacked").as_posix()
             for number, path in enumerate(sounds)}  # fmt: skip

    def by_name(pairs: list[str]) -> list[str]:
        return [
            " -> ".join(names[part.split("/")[-1].split("_")[0]] for part in pair.split(" -> "))
            for pair in pairs
            if "_" not in pair.split(" -> ")[0].split("/")[-1]  # the originals, once each
        ]

    removed, other, cost = run_ours(str(corpus), work / "real-out")
    result = measure(groups, removed) | judge(removed) | cost
    result["other_exclusions"] = dict(sorted(Counter(other.values()).items()))
    result["sounds"] = len(sounds)
    result["across_pairs"] = by_name(result["across_pairs"])
    if peer:
        clips = clips_reaching_dedup(
            [corpus / "real.tar"], set(other), work / "chromaprint" / "real"
        )
        found = run_peer(clips, work / "chromaprint")
        result["chromaprint"] = peer_report(found, groups, judge)
        result["chromaprint"]["across_pairs"] = by_name(result["chromaprint"]["across_pairs"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", default=str(ROOT / "bench" / "data" / "audio-dedup"))
    parser.add_argument("--only", choices=("synthetic", "real"), help="run one corpus")
    parser.add_argument("--peer", choices=("chromaprint", "none"), default="chromaprint")
    args = parser.parse_args()
    work = Path(args.work)
    peer = args.peer == "chromaprint"
    results = json.loads(RESULTS.read_text()) if args.only and RESULTS.exists() else {}
    if args.only != "real":
        results["synthetic"] = synthetic(work, args.samples, args.seed, peer)
    if args.only != "synthetic":
        results["real"] = real(work, peer)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
