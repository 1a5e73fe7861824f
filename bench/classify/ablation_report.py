"""The ablation's numbers: the classifier against the labels, the runs' held-out losses
over seeds (and the paired difference top - random), the docs' tables."""

from __future__ import annotations

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
    per origin, along the ranking (the top k documents for 200 values of k), and the
    histogram of the scores by label."""
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
    edges = np.linspace(0.0, 1.0, 41)
    clipped = np.clip(score, 0.0, 1.0)  # fastText's certain score reads 1.00001
    return {
        "at_0.5": binary_metrics(good, score),
        "histogram": {
            "edges": edges.tolist(),
            "good": np.histogram(clipped[good], edges)[0].tolist(),
            "bad": np.histogram(clipped[~good], edges)[0].tolist(),
        },
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
