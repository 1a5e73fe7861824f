"""The ablation's numbers and plots: the classifier against the labels, the runs' held-out
losses over seeds (and the paired difference top - random), the docs' tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mixplane.classify.metrics import binary_metrics

CLEAN = "clean"
LOW_QUALITY = "low_quality"


def classifier_report(scores: dict[str, Any], merge: dict[str, Any], keep_top: float) -> dict:
    """Precision/recall of the scores on the pool (documents the classifier never saw)
    against the labels: at 0.5, for the top selection (`merge`: the `keep_top` run's merge
    summary), per origin, and the curve."""
    score, good, origin = scores["score"], scores["good"], scores["origin"]
    order = np.argsort(-score, kind="stable")
    hits = np.cumsum(good[order])
    taken = np.arange(1, len(score) + 1)
    precision, recall = hits / taken, hits / good.sum()
    points = np.unique(np.linspace(0, len(score) - 1, 200).astype(int))
    kept = scores["kept"]
    return {
        "at_0.5": binary_metrics(good, score),
        "top_selection": {
            "keep_top": keep_top,
            "documents": int(kept.sum()),
            "cutoff": merge["cutoff"],
            "precision": float(good[kept].mean()),
            "recall": float(good[kept].sum() / good.sum()),
        },
        "by_origin": {
            name: {
                "documents": int((origin == name).sum()),
                "label": "good" if good[origin == name].all() else "bad",
                "mean_score": float(score[origin == name].mean()),
                "kept_by_top": float(kept[origin == name].mean()),
            }
            for name in sorted(set(origin.tolist()))
        },
        "curve": {
            "kept": taken[points].tolist(),
            "precision": precision[points].tolist(),
            "recall": recall[points].tolist(),
            "threshold": score[order][points].tolist(),
        },
    }


def with_clean(losses: dict[str, float], origins: list[str]) -> dict[str, float]:
    """`losses` plus `clean`: the mean over the good origins (each counts the same)."""
    return losses | {CLEAN: float(np.mean([losses[name] for name in origins]))}


def summarize(runs: dict[str, dict[int, dict]], origins: list[str]) -> dict[str, Any]:
    """Per arm and held-out set: mean, min and max over seeds of the final loss; and the
    paired difference top - random per seed (negative: the top selection is better)."""
    names = [CLEAN, *origins, LOW_QUALITY]
    final = {
        arm: {
            seed: with_clean({k: v["loss"] for k, v in run["final"].items()}, origins)
            for seed, run in seeds.items()
        }
        for arm, seeds in runs.items()
    }
    summary: dict[str, Any] = {}
    for arm, seeds in final.items():
        summary[arm] = {name: _spread([seeds[s][name] for s in sorted(seeds)]) for name in names}
    seeds = sorted(final["top"])
    summary["seeds"] = len(seeds)
    summary["top_minus_random"] = {
        name: _spread([final["top"][s][name] - final["random"][s][name] for s in seeds])
        | {"seeds_lower": sum(final["top"][s][name] < final["random"][s][name] for s in seeds)}
        for name in names
    }
    return summary


def _spread(values: list[float]) -> dict[str, float]:
    return {"mean": float(np.mean(values)), "min": float(min(values)), "max": float(max(values))}


def loss_table(summary: dict[str, Any], origins: list[str]) -> str:
    """The docs' table: per held-out set, each arm's mean [min, max] and the difference."""
    rows = [
        "| held-out set | random | top | top - random (paired) | seeds where top is lower |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name in [CLEAN, *origins, LOW_QUALITY]:
        cells = [_cell(summary[arm][name]) for arm in ("random", "top")]
        diff = summary["top_minus_random"][name]
        rows.append(
            f"| {name} | {cells[0]} | {cells[1]} | {_cell(diff, '+.3f')} | "
            f"{diff['seeds_lower']} of {summary['seeds']} |"
        )
    return "\n".join(rows)


def _cell(stats: dict[str, float], form: str = ".3f") -> str:
    return f"{stats['mean']:{form}} [{stats['min']:{form}}, {stats['max']:{form}}]"


def plot(results: dict[str, Any], scores: dict[str, Any], folder: Path) -> list[Path]:
    """Two PNGs: the held-out clean loss of every run over steps (the first curve sequences
    of each origin) beside the final loss per origin; the classifier's precision and recall
    on the pool with its score histogram by label."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    folder.mkdir(parents=True, exist_ok=True)
    origins, runs = results["heldout_origins"], results["runs"]
    colours = {"random": "tab:orange", "top": "tab:blue"}
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(11, 3.8))
    for arm, seeds in runs.items():
        for index, run in enumerate(seeds.values()):
            steps = [point["step"] for point in run["curve"]]
            clean = [with_clean(point, origins)[CLEAN] for point in run["curve"]]
            label = f"{arm} (one line a seed)" if index == 0 else None
            left.plot(steps, clean, color=colours[arm], alpha=0.8, label=label)
    left.set_xlabel("step")
    left.set_ylabel("held-out clean loss (nats/token)")
    left.set_title("held-out clean text, during training")
    left.legend()
    difference = results["summary"]["top_minus_random"]
    names = [CLEAN, *origins, LOW_QUALITY]
    means = [difference[name]["mean"] for name in names]
    low = [difference[name]["mean"] - difference[name]["min"] for name in names]
    high = [difference[name]["max"] - difference[name]["mean"] for name in names]
    colour = ["tab:blue" if mean < 0 else "tab:orange" for mean in means]
    right.bar(np.arange(len(names)), means, 0.6, yerr=[low, high], color=colour)
    right.axhline(0, color="black", linewidth=0.8)
    right.set_xticks(np.arange(len(names)), names, rotation=30, ha="right")
    right.set_ylabel("top - random, final loss (nats/token)")
    right.set_title("paired difference per held-out set (bars: seed range)")
    figure.tight_layout()
    loss_path = folder / "quality-ablation-loss.png"
    figure.savefig(loss_path, dpi=110)
    pyplot.close(figure)

    classifier = results["classifier"]["pool"]
    curve = classifier["curve"]
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(11, 3.8))
    left.plot(curve["recall"], curve["precision"], color="tab:blue")
    at_half = classifier["at_0.5"]
    top = classifier["top_selection"]
    left.scatter([at_half["recall"]], [at_half["precision"]], color="black", zorder=3)
    left.annotate("score >= 0.5", (at_half["recall"], at_half["precision"]), (8, -14),
                  textcoords="offset points")  # fmt: skip
    left.scatter([top["recall"]], [top["precision"]], color="tab:red", zorder=3)
    left.annotate(f"keep_top {top['keep_top']}", (top["recall"], top["precision"]), (8, 4),
                  textcoords="offset points")  # fmt: skip
    left.set_xlabel("recall of good documents")
    left.set_ylabel("precision")
    left.set_title("classifier on the pool (never trained on)")
    bins = np.linspace(0, 1.0001, 41)
    for label, mask, colour in (("good", scores["good"], "tab:green"),
                                ("bad", ~scores["good"], "tab:red")):  # fmt: skip
        right.hist(scores["score"][mask], bins, alpha=0.6, color=colour, label=label)
    right.axvline(top["cutoff"], color="black", linestyle="--", label="keep_top cutoff")
    right.set_yscale("log")
    right.set_xlabel("score (probability of good)")
    right.set_ylabel("documents")
    right.set_title("scores of the pool's documents by label")
    right.legend()
    figure.tight_layout()
    classifier_path = folder / "quality-ablation-classifier.png"
    figure.savefig(classifier_path, dpi=110)
    pyplot.close(figure)
    return [loss_path, classifier_path]
