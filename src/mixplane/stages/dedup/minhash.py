"""MinHash signatures, LSH band keys and the choice of bands x rows (pure numpy).

Signatures are fast similarity sketches (Dahlgaard, Knudsen and Thorup, 2017): in round i
every shingle's 64-bit hash, salted by the seed and the round, picks one of `count` bins
and offers the value `i + u` (u uniform in [0, 1), from the hash's low bits); each bin keeps
its minimum. Rounds stop once every bin of a text is filled, since later rounds only offer
larger values; from round `count` on, a shingle steps through the bins in turn, so every
bin fills. Two texts agree on a bin with probability about their Jaccard similarity, and
the estimate is as precise as with `count` independent permutations `(a*h + b) mod
(2^61 - 1)`, but a long text costs one or two passes over its shingles instead of `count`.
Tests compare both estimators against exact similarity.
"""

from __future__ import annotations

import numpy as np

from mixplane.stages.dedup.hashing import mix64

_LOW32 = np.uint64(0xFFFFFFFF)
_UNFILLED = np.iinfo(np.uint64).max


def signatures(hashes: np.ndarray, offsets: np.ndarray, count: int, seed: int = 1) -> np.ndarray:
    """MinHash signatures: one row of `count` uint32 values per text.

    Text i owns shingle hashes `hashes[offsets[i]:offsets[i+1]]`; a text without shingles
    gets a row of zeros (and no band keys: the caller skips it).

    Example:
        >>> sig = signatures(np.arange(6, dtype=np.uint64), np.array([0, 3, 6, 6]), 4)
        >>> sig.shape, sig[2].tolist()
        ((3, 4), [0, 0, 0, 0])
    """
    texts = len(offsets) - 1
    sketch = np.full(texts * count, _UNFILLED, dtype=np.uint64)
    owner = np.repeat(np.arange(texts, dtype=np.int64), np.diff(offsets))
    salt = mix64(np.array([seed], dtype=np.uint64))[0]
    start = np.zeros(len(hashes), dtype=np.uint64)
    for round_ in range(2 * count):
        if not len(owner):
            break
        mixed = mix64(hashes ^ (salt + np.uint64(round_)))
        if round_ < count:
            bins = ((mixed >> np.uint64(32)) * np.uint64(count)) >> np.uint64(32)
            if round_ == 0:
                start = bins
        else:  # walk the bins from the first round's bin, so every bin is reached
            bins = (start + np.uint64(round_ - count + 1)) % np.uint64(count)
        values = (np.uint64(round_) << np.uint64(32)) | (mixed & _LOW32)
        np.minimum.at(sketch, owner * count + bins.astype(np.int64), values)
        full = (sketch.reshape(texts, count) != _UNFILLED).all(axis=1)
        active = ~full[owner]
        if not active.all():
            owner, hashes, start = owner[active], hashes[active], start[active]
    signature = (sketch & _LOW32).astype(np.uint32).reshape(texts, count)
    signature[np.diff(offsets) == 0] = 0
    return signature


_ROW_WEIGHTS = mix64(np.arange(1, 257, dtype=np.uint64)) | np.uint64(1)


def band_keys(signature: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """One 64-bit key per band: texts whose band rows all agree share the key.

    Example:
        >>> sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9]], dtype=np.uint32)
        >>> keys = band_keys(sig, bands=2, rows=2)
        >>> bool(keys[0, 0] == keys[1, 0]), bool(keys[0, 1] == keys[1, 1])
        (True, False)
    """
    if bands * rows > signature.shape[1] or rows > len(_ROW_WEIGHTS):
        raise ValueError(f"{bands} bands x {rows} rows do not fit {signature.shape[1]} hashes")
    grouped = signature[:, : bands * rows].reshape(len(signature), bands, rows)
    weighted = grouped.astype(np.uint64) * _ROW_WEIGHTS[:rows]
    return mix64(weighted.sum(axis=2, dtype=np.uint64))


def agreement(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Share of equal signature values per row pair: an estimate of Jaccard similarity.

    Example:
        >>> agreement(np.array([[1, 2, 3, 4]]), np.array([[1, 2, 0, 0]])).tolist()
        [0.5]
    """
    return (left == right).mean(axis=1)


def collision_probability(similarity, bands: int, rows: int):
    """Probability that two texts of Jaccard `similarity` share at least one band key.

    Example:
        >>> round(float(collision_probability(0.8, 14, 8)), 3)
        0.924
    """
    return 1.0 - (1.0 - np.asarray(similarity, dtype=float) ** rows) ** bands


def curve_midpoint(bands: int, rows: int) -> float:
    """The similarity where the LSH curve rises fastest, about (1/bands)^(1/rows).

    Example:
        >>> round(curve_midpoint(14, 8), 3)
        0.719
    """
    return (1.0 / bands) ** (1.0 / rows)


def area(y: np.ndarray, x: np.ndarray) -> float:
    """The area under the curve through points `(x, y)` by the trapezoidal rule (NumPy 2's
    `np.trapezoid`, called `np.trapz` before; written out so either NumPy will do).

    Example:
        >>> area(np.array([0.0, 1.0, 1.0]), np.array([0.0, 1.0, 2.0]))
        1.5
    """
    return float(np.sum((y[1:] + y[:-1]) * np.diff(x)) / 2)


def choose_bands_rows(
    threshold: float, hashes: int, false_positive_weight: float = 0.1
) -> tuple[int, int]:
    """Bands and rows (bands*rows <= hashes) minimising the weighted area of false
    positives below `threshold` and false negatives above it on the LSH curve.

    False positives weigh less by default because candidate pairs are verified on their
    full signatures afterwards, while a pair LSH misses is lost for good.

    Example:
        >>> choose_bands_rows(0.8, 112)
        (12, 9)
    """
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold}")
    below = np.linspace(0.0, threshold, 401)
    above = np.linspace(threshold, 1.0, 401)
    best, best_cost = (1, 1), float("inf")
    for bands in range(1, hashes + 1):
        for rows in range(1, hashes // bands + 1):
            false_positive = area(collision_probability(below, bands, rows), below)
            false_negative = area(1 - collision_probability(above, bands, rows), above)
            cost = (
                false_positive_weight * false_positive
                + (1 - false_positive_weight) * false_negative
            )
            if cost < best_cost - 1e-12:
                best, best_cost = (bands, rows), cost
    return best
