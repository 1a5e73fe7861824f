"""The ablation's plots, drawn from its results alone (bench/results/quality-ablation.json).

- `quality-ablation-loss.png`: per `keep_top`, the held-out loss on real and on synthetic
  clean text of every run over the steps, and the paired difference top - random of the
  final loss per held-out set;
- `quality-ablation-classifier.png`: the classifier's precision and recall on the pool when
  keeping its top documents, against the share kept; its scores by label.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bench.classify.ablation_report import GROUPS, with_groups

COLOURS = {"random": "tab:orange", "top": "tab:blue"}


def plot(results: dict[str, Any], folder: Path) -> list[Path]:
    """Both PNGs into `folder`; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "quality-ablation-loss.png", folder / "quality-ablation-classifier.png"]
    for path, draw in zip(paths, (_losses, _classifier), strict=True):
        figure = draw(pyplot, results)
        figure.tight_layout()
        figure.savefig(path, dpi=100)
        pyplot.close(figure)
    return paths


def _losses(pyplot, results: dict[str, Any]):
    origins, experiments = results["heldout_origins"], results["experiments"]
    rows = len(experiments)
    figure, axes = pyplot.subplots(rows, 3, figsize=(15, 3.8 * rows), squeeze=False)
    for row, experiment in enumerate(experiments.values()):
        keep = experiment["keep_top"]
        for axis, group in zip(axes[row][:2], ("clean_real", "clean_synth"), strict=True):
            for arm, seeds in experiment["runs"].items():
                for index, run in enumerate(seeds.values()):
                    steps = [point["step"] for point in run["curve"]]
                    values = [with_groups(point, origins)[group] for point in run["curve"]]
                    label = f"{arm} (a line a seed)" if index == 0 else None
                    axis.plot(steps, values, color=COLOURS[arm], alpha=0.8, label=label)
            kind = "real" if group == "clean_real" else "synthetic"
            axis.set_xlabel("step")
            axis.set_ylabel("held-out loss (nats/token)")
            axis.set_title(f"keep_top {keep}: {kind} clean text")
            axis.legend()
        difference = experiment["summary"]["top_minus_random"]
        names = [*GROUPS, *origins]  # low_quality is in the table: its scale is another
        means = [difference[n]["mean"] for n in names]
        low = [difference[n]["mean"] - difference[n]["min"] for n in names]
        high = [difference[n]["max"] - difference[n]["mean"] for n in names]
        axis = axes[row][2]
        bars = [COLOURS["top"] if mean < 0 else COLOURS["random"] for mean in means]
        axis.bar(np.arange(len(names)), means, 0.6, yerr=[low, high], color=bars)
        axis.axhline(0, color="black", linewidth=0.8)
        axis.set_xticks(np.arange(len(names)), names, rotation=35, ha="right", fontsize=8)
        axis.set_ylabel("top - random, final loss")
        axis.set_title(f"keep_top {keep}: top - random (seed range)")
    return figure


def _classifier(pyplot, results: dict[str, Any]):
    pool = results["classifier"]["pool"]
    curve = pool["curve"]
    documents = pool["at_0.5"]["examples"]
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(11, 3.8))
    share = np.asarray(curve["kept"]) / documents
    left.plot(share, curve["precision"], color="tab:blue", label="precision")
    left.plot(share, curve["recall"], color="tab:green", label="recall of good documents")
    good = sum(pool["histogram"]["good"]) / documents
    left.axvline(good, color="grey", linestyle=":", label=f"good share of the pool ({good:.2f})")
    for top in pool["top_selections"].values():
        kept = top["documents"] / documents
        left.scatter([kept, kept], [top["precision"], top["recall"]], color="black", zorder=3)
        left.annotate(f"keep_top {top['keep_top']}", (kept, top["recall"]), (6, -14),
                      textcoords="offset points")  # fmt: skip
    left.set_xlabel("share of the pool kept, best scores first")
    left.set_ylim(0, 1.05)
    left.set_title("classifier on the pool (documents it never saw)")
    left.legend(loc="lower center", fontsize="small")
    histogram = pool["histogram"]
    edges = np.asarray(histogram["edges"])
    for label, colour in (("good", "tab:green"), ("bad", "tab:red")):
        right.stairs(histogram[label], edges, fill=True, alpha=0.6, color=colour, label=label)
    for top in pool["top_selections"].values():
        right.axvline(top["cutoff"], color="black", linestyle="--")
    right.set_yscale("log")
    right.set_xlabel("score (probability of good); dashed: keep_top cutoffs")
    right.set_ylabel("documents")
    right.set_title("scores of the pool's documents by label")
    right.legend()
    return figure
