"""Held-out metrics of a binary classifier: pure functions over labels and scores.

Example:
    >>> m = binary_metrics(np.array([1, 1, 0, 0]), np.array([0.9, 0.4, 0.6, 0.1]))
    >>> m["precision"], m["recall"], m["auc"]
    (0.5, 0.5, 0.75)
"""

from __future__ import annotations

from typing import Any

import numpy as np


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of `values`, equal values sharing the mean of their ranks.

    Example:
        >>> average_ranks(np.array([0.3, 0.1, 0.3])).tolist()
        [2.5, 1.0, 2.5]
    """
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    mean_rank = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def auc(truth: np.ndarray, scores: np.ndarray) -> float | None:
    """Area under the ROC curve: the chance a random positive outscores a random negative,
    ties counting one half (the Mann-Whitney U statistic over the pairs); None without both
    classes.

    Example:
        >>> auc(np.array([1, 0, 1]), np.array([0.5, 0.5, 0.9]))
        0.75
    """
    truth = np.asarray(truth, dtype=bool)
    positives, negatives = int(truth.sum()), int((~truth).sum())
    if not positives or not negatives:
        return None
    ranks = average_ranks(np.asarray(scores, dtype=np.float64))
    u = ranks[truth].sum() - positives * (positives + 1) / 2
    return float(u / (positives * negatives))


def binary_metrics(truth: np.ndarray, scores: np.ndarray, threshold: float = 0.5) -> dict[str, Any]:
    """Precision, recall, F1 and accuracy when `scores >= threshold` predicts the positive
    class, AUC over all thresholds, and the counts behind them.

    Precision is 0.0 when nothing is predicted positive; recall when there is no positive.
    """
    truth = np.asarray(truth, dtype=bool)
    predicted = np.asarray(scores) >= threshold
    tp = int((predicted & truth).sum())
    fp = int((predicted & ~truth).sum())
    fn = int((~predicted & truth).sum())
    tn = int((~predicted & ~truth).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    total = len(truth)
    return {
        "examples": total,
        "threshold": threshold,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "accuracy": (tp + tn) / total if total else 0.0,
        "auc": auc(truth, scores),
        "true_positives": tp,
        "false_positives": fp,
        "false_negatives": fn,
        "true_negatives": tn,
    }


def regression_metrics(truth: np.ndarray, scores: np.ndarray, threshold: float) -> dict[str, Any]:
    """Mean squared and absolute error of `scores` against `truth`, and the binary metrics
    (`binary_metrics`) of the cut `score >= threshold` against `truth >= threshold`: how
    well filtering at the threshold keeps the documents whose true score reaches it.

    Example:
        >>> m = regression_metrics(np.array([0.0, 2.0, 4.0]), np.array([1.0, 2.0, 3.0]), 3.0)
        >>> m["mse"], m["mae"], m["recall"], m["precision"]
        (0.6666666666666666, 0.6666666666666666, 1.0, 1.0)
    """
    truth = np.asarray(truth, dtype=np.float64)
    scores = np.asarray(scores, dtype=np.float64)
    errors = scores - truth
    binary = binary_metrics(truth >= threshold, scores, threshold)
    return {
        "mse": float(np.mean(errors**2)) if len(truth) else 0.0,
        "mae": float(np.mean(np.abs(errors))) if len(truth) else 0.0,
        **binary,
    }
