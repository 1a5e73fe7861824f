"""The peer: near-duplicate audio found with Chromaprint, as a careful user would write it.

Every clip is fingerprinted by `fpcalc -raw` (Debian's libchromaprint-tools): a sequence of
32-bit sub-fingerprints, about 8 a second, each from 16 frames of 12-bin chroma (0.37 s
frames every 0.124 s at 11025 Hz), so a clip needs about 2.8 s before its first one; fpcalc
answers "Empty fingerprint" for shorter clips, which are then never compared.

Two fingerprints are compared as AcoustID compares them: at the alignment where they agree
best, by bit error rate (the share of differing bits over the items both cover). AcoustID's
server picks the alignment by a vote of matching items and scores the overlap; here every
offset up to AcoustID's 120 items (about 15 s) is tried and the lowest bit error rate
kept, over alignments that cover at least half of the shorter fingerprint (a one-item
overlap would match by chance). Pairs at or under the threshold are joined by union-find;
each cluster keeps its smallest id, as `dedup_audio` does with no `prefer_sources`. The
threshold, a bit error rate of 0.1, is the largest of the sweep with no more false removals
than 0.1 on the synthetic corpus: its fingerprints are short (14 items at the median), two
spoken sentences often differ in under 20% of their bits, and union-find chains such pairs
(0.15 removes 23 clips of other recordings, 0.2 removes 220).

Every pair is compared (no candidate pruning): for each clip, one XOR of its items against
every item of the later clips, popcount by a 16-bit lookup table, and the bit errors summed
per (clip, offset) with `np.bincount`.

Run by `bench.audio.dedup` as a child process, so fpcalc's CPU time is counted with it:
    python -m bench.audio.chromaprint CLIPS.json OUT.json [--threshold 0.1]
where CLIPS.json is a list of {"id", "path"}.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import numpy as np

MAX_OFFSET = 120  # items, AcoustID's alignment range (about 15 s)
MIN_OVERLAP = 0.5  # of the shorter fingerprint's items
THRESHOLD = 0.1  # bit error rate at or under which two clips are one recording (the sweep)
SWEEP = (0.1, 0.15, 0.2, 0.25, 0.3, 0.35)
_POPCOUNT16 = np.unpackbits(np.arange(1 << 16, dtype=">u2").view(np.uint8)).reshape(-1, 16)
_POPCOUNT16 = _POPCOUNT16.sum(axis=1).astype(np.uint8)


def ensure_fpcalc() -> str:
    """The fpcalc executable, installed from Debian's libchromaprint-tools if missing."""
    if shutil.which("fpcalc") is None:
        subprocess.run(["apt-get", "install", "-y", "-q", "libchromaprint-tools"], check=True)
    return shutil.which("fpcalc") or "fpcalc"


def fingerprint(path: Path, fpcalc: str = "fpcalc") -> tuple[np.ndarray | None, str]:
    """The clip's raw fingerprint, or None and fpcalc's last error line.

    One fpcalc a file: given several, fpcalc stops at the first failing one and its output
    does not name the file. fpcalc 1.5.1 on FFmpeg 5 also exits 3 with "Error decoding audio
    frame (End of file)" after printing a good fingerprint, so the printed JSON decides.
    """
    done = subprocess.run([fpcalc, "-raw", "-json", str(path)], capture_output=True, text=True)
    if done.stdout.strip():
        return np.array(json.loads(done.stdout)["fingerprint"], dtype=np.uint32), ""
    lines = done.stderr.strip().splitlines()
    return None, lines[-1] if lines else f"exit {done.returncode}"


def best_bit_errors(prints: list[np.ndarray], keep_below: float) -> list[tuple[int, int, float]]:
    """(a, b, bit error rate at the best alignment) for every pair a < b at or under
    `keep_below`.

    Example:
        >>> x = np.array([1, 2, 3, 4], dtype=np.uint32)
        >>> best_bit_errors([x, x[1:], ~x], 0.2)
        [(0, 1, 0.0)]
    """
    lengths = np.array([len(p) for p in prints])
    starts = np.concatenate([[0], np.cumsum(lengths)])
    items = np.concatenate(prints)
    owner = np.repeat(np.arange(len(prints)), lengths)
    position = np.arange(len(items)) - starts[owner]
    width = 2 * MAX_OFFSET + 1
    found = []
    for a in range(len(prints) - 1):
        later = slice(starts[a + 1], len(items))
        xor = prints[a][:, None] ^ items[None, later]
        errors = _POPCOUNT16[xor & 0xFFFF] + _POPCOUNT16[xor >> 16]
        shift = position[None, later] - np.arange(lengths[a])[:, None]
        within = np.abs(shift) <= MAX_OFFSET
        key = ((owner[None, later] - a - 1) * width + shift + MAX_OFFSET)[within]
        others = len(prints) - a - 1
        bits = np.bincount(key, weights=errors[within], minlength=others * width)
        overlap = np.bincount(key, minlength=others * width).reshape(others, width)
        need = np.maximum(1, np.ceil(MIN_OVERLAP * np.minimum(lengths[a], lengths[a + 1 :])))
        with np.errstate(divide="ignore", invalid="ignore"):
            rate = bits.reshape(others, width) / (32 * overlap)
        rate[overlap < need[:, None]] = np.inf
        best = rate.min(axis=1)
        for b in np.flatnonzero(best <= keep_below):
            found.append((a, a + 1 + int(b), round(float(best[b]), 4)))
    return found


def removals(ids: list[str], pairs: list[tuple[str, str, float]], threshold: float) -> dict:
    """{removed id: survivor} from union-find over the pairs at or under `threshold`; the
    survivor of a cluster is its smallest id.

    Example:
        >>> removals(["a", "b", "c"], [("b", "c", 0.1), ("a", "b", 0.3)], 0.2)
        {'c': 'b'}
    """
    parent = {doc: doc for doc in ids}

    def root(doc: str) -> str:
        while parent[doc] != doc:
            parent[doc] = parent[parent[doc]]
            doc = parent[doc]
        return doc

    for a, b, rate in pairs:
        if rate <= threshold:
            ra, rb = root(a), root(b)
            parent[max(ra, rb)] = min(ra, rb)  # the smaller id stays the root
    return {doc: root(doc) for doc in ids if root(doc) != doc}


def dedup(clips: list[dict], threshold: float = THRESHOLD) -> dict:
    """Fingerprint every clip, compare every pair, cluster; with the pairs under the
    sweep's largest threshold so other thresholds are judged without comparing again."""
    fpcalc = ensure_fpcalc()
    started = time.perf_counter()
    ids, prints, missing = [], [], Counter()
    for clip in sorted(clips, key=lambda c: c["id"]):
        values, error = fingerprint(Path(clip["path"]), fpcalc)
        if values is None or len(values) == 0:
            missing[error or "empty"] += 1
        else:
            ids.append(clip["id"])
            prints.append(values)
    fingerprinted = time.perf_counter()
    pairs = [(ids[a], ids[b], rate) for a, b, rate in best_bit_errors(prints, max(SWEEP))]
    removed = removals(ids, pairs, threshold)
    lengths = [len(p) for p in prints]
    return {
        "clips": len(clips),
        "fingerprinted": len(ids),
        "no_fingerprint": dict(sorted(missing.items())),
        "items_median": int(np.median(lengths)) if lengths else 0,
        "threshold": threshold,
        "fingerprint_seconds": round(fingerprinted - started, 1),
        "compare_seconds": round(time.perf_counter() - fingerprinted, 1),
        "removed": removed,
        "pairs": pairs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("clips", help="JSON list of {id, path}")
    parser.add_argument("out", help="where the result goes (JSON)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD)
    args = parser.parse_args()
    clips = json.loads(Path(args.clips).read_text())
    Path(args.out).write_text(json.dumps(dedup(clips, args.threshold)))


if __name__ == "__main__":
    main()
