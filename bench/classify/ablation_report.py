"""The ablation's numbers and plots: the classifier against the labels, the runs' held-out
losses over seeds (and the paired difference top - random), the docs' tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mixplane.classify.metrics import binary_metrics

LOW_QUALITY = "low_quality"
SYNTH_PREFIX = "synth_"
# The held-out averages: every good origin counts the same.
GROUPS = {
    "clean": lambda origin: True,
    "clean_real": lambda origin: not origin.startswith(SYNTH_PREFIX),
    "clean_synth": lambda origin: origin.startswith(SYNTH_PREFIX),
}


def classifier_report(scores: dict[str, Any], merges: dict[str, dict]) -> dict[str, Any]:
    """Precision/recall of the scores on the pool (documents the classifier never saw)
    against the labels: at 0.5, for each `keep_top` selection (`merges`: its merge summary),
    per origin, and the whole curve."""
    score, good, origin = scores["score"], scores["good"], scores["origin"]
    order = np.argsort(-score, kind="stable")
    hits = np.cumsum(good[order])
    taken = np.arange(1, len(score) + 1)
    precision, recall = hits / taken, hits / good.sum()
    points = np.unique(np.linspace(0, len(score) - 1, 200).astype(int))
    tops = {}
    for name, merge in merges.items():
        kept = scores["kept"][name]
        tops[name] = {
            "keep_top": merge["keep_top"],
            "documents": int(kept.sum()),
            "cutoff": merge["cutoff"],
            "precision": float(good[kept].mean()),
            "recall": float(good[kept].sum() / good.sum()),
        }
    by_origin = {}
    for name in sorted(set(origin.tolist())):
        mask = origin == name
        by_origin[name] = {
            "documents": int(mask.sum()),
            "label": "good" if good[mask].all() else "bad",
            "mean_score": float(score[mask].mean()),
            "kept": {top: float(scores["kept"][top][mask].mean()) for top in merges},
        }
    return {
        "at_0.5": binary_metrics(good, score),
        "top_selections": tops,
        "by_origin": by_origin,
        "curve": {
            "kept": taken[points].tolist(),
            "precision": precision[points].tolist(),
            "recall": recall[points].tolist(),
            "threshold": score[order][points].tolist(),
        },
    }


def with_groups(losses: dict[str, float], origins: list[str]) -> dict[str, float]:
    """`losses` plus the `GROUPS` averages over the good origins."""
    out = dict(losses)
    for group, member in GROUPS.items():
        out[group] = float(np.mean([losses[name] for name in origins if member(name)]))
    return out


def summarize(runs: dict[str, dict[int, dict]], origins: list[str]) -> dict[str, Any]:
    """Per arm and held-out set: mean, min and max over seeds of the final loss; and the
    paired difference top - random per seed (negative: the top selection is better)."""
    names = [*GROUPS, *origins, LOW_QUALITY]
    final = {
        arm: {
            seed: with_groups({k: v["loss"] for k, v in run["final"].items()}, origins)
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
    for name in [*GROUPS, *origins, LOW_QUALITY]:
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
    """Two PNGs: per `keep_top`, the held-out loss on real and on synthetic clean text of
    every run over steps, and the paired difference per held-out set; the classifier's
    precision and recall on the pool, and its scores by label."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    folder.mkdir(parents=True, exist_ok=True)
    origins, experiments = results["heldout_origins"], results["experiments"]
    colours = {"random": "tab:orange", "top": "tab:blue"}
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
                    axis.plot(steps, values, color=colours[arm], alpha=0.8, label=label)
            axis.set_xlabel("step")
            axis.set_ylabel("held-out loss (nats/token)")
            axis.set_title(f"keep_top {keep}: {group.replace('_', ' text, ')}")
            axis.legend()
        difference = experiment["summary"]["top_minus_random"]
        names = [*GROUPS, *origins]  # low_quality is in the table: its scale is another
        means = [difference[n]["mean"] for n in names]
        low = [difference[n]["mean"] - difference[n]["min"] for n in names]
        high = [difference[n]["max"] - difference[n]["mean"] for n in names]
        axis = axes[row][2]
        bars = ["tab:blue" if mean < 0 else "tab:orange" for mean in means]
        axis.bar(np.arange(len(names)), means, 0.6, yerr=[low, high], color=bars)
        axis.axhline(0, color="black", linewidth=0.8)
        axis.set_xticks(np.arange(len(names)), names, rotation=35, ha="right", fontsize=8)
        axis.set_ylabel("top - random, final loss")
        axis.set_title(f"keep_top {keep}: top - random on clean text (seed range)")
    figure.tight_layout()
    loss_path = folder / "quality-ablation-loss.png"
    figure.savefig(loss_path, dpi=100)
    pyplot.close(figure)

    classifier = results["classifier"]["pool"]
    curve = classifier["curve"]
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(11, 3.8))
    left.plot(curve["recall"], curve["precision"], color="tab:blue")
    at_half = classifier["at_0.5"]
    points = [("score >= 0.5", at_half, "black")] + [
        (f"keep_top {top['keep_top']}", top, "tab:red")
        for top in classifier["top_selections"].values()
    ]
    for text, point, colour in points:
        left.scatter([point["recall"]], [point["precision"]], color=colour, zorder=3)
        left.annotate(text, (point["recall"], point["precision"]), (-80, -16),
                      textcoords="offset points")  # fmt: skip
    left.set_xlabel("recall of good documents")
    left.set_ylabel("precision")
    left.set_title("classifier on the pool (never trained on)")
    bins = np.linspace(0, 1.0001, 41)
    for label, mask, colour in (("good", scores["good"], "tab:green"),
                                ("bad", ~scores["good"], "tab:red")):  # fmt: skip
        right.hist(scores["score"][mask], bins, alpha=0.6, color=colour, label=label)
    for top in classifier["top_selections"].values():
        right.axvline(top["cutoff"], color="black", linestyle="--")
    right.set_yscale("log")
    right.set_xlabel("score (probability of good); dashed: keep_top cutoffs")
    right.set_ylabel("documents")
    right.set_title("scores of the pool's documents by label")
    right.legend()
    figure.tight_layout()
    classifier_path = folder / "quality-ablation-classifier.png"
    figure.savefig(classifier_path, dpi=110)
    pyplot.close(figure)
    return [loss_path, classifier_path]


def composition_table(results: dict[str, Any]) -> str:
    """Per origin: the pool's documents and mean score, and per `keep_top` the share of its
    documents kept and its tokens in the top and in the random selection (mean of seeds)."""
    experiments = results["experiments"]
    by_origin = results["classifier"]["pool"]["by_origin"]
    header = "| origin | label | pool documents | mean score |"
    rule = "| --- | --- | ---: | ---: |"
    for experiment in experiments.values():
        header += f" kept by keep_top {experiment['keep_top']} | tokens: top / random |"
        rule += " ---: | ---: |"
    rows = [header, rule]
    for origin, entry in by_origin.items():
        row = f"| {origin} | {entry['label']} | {entry['documents']} | {entry['mean_score']:.3f} |"
        for name, experiment in experiments.items():
            selections = experiment["selections"]
            top = _tokens(selections["top"], origin)
            randoms = [_tokens(s, origin) for s in selections["random"].values()]
            row += f" {entry['kept'][name]:.0%} | {top:,} / {round(np.mean(randoms)):,} |"
        rows.append(row)
    return "\n".join(rows)


def _tokens(selection: dict[str, Any], origin: str) -> int:
    return selection["composition"]["by"].get(f"origin={origin}", {"tokens": 0})["tokens"]
