"""Adaptive mixing on a small causal LM: four synthetic components of known difficulty.

    .venv/bin/python bench/adaptive/experiment.py --steps 2000 --seeds 3 --jobs 2

Components (vocabulary 256, documents of about 100 tokens, written by the store's writer and
registered in a real catalog), with natural shares by size:

- `noise`: uniform random tokens: nothing to learn (the best loss is ln 255 = 5.54);
- `easy`: a first-order Markov chain with two successors per token (0.9 / 0.1): learnt fast;
- `hard`: a second-order chain (the successor depends on the last token and on the one
  before it modulo 16: 4,080 contexts, four successors each with Dirichlet(1)
  probabilities): learnt more slowly;
- `text`: a large first-order chain with 32 Zipf-distributed successors, text-like.

Every run trains the same model on the same token budget, through `MixtureDataset` and
`torch_loader`; adaptive runs call `Feedback.observe` every step. Each seed sets the model's
initialization and the mixture's seed (the order of the data); every run of a seed shares
them. Runs: `natural` (static, shares by size: the baseline), `uniform` (static), `ado`
(its defaults), `ado_earlier` (the ADO of earlier mixplane versions), `odm`, and
`excess_loss` (reference losses: the held-out losses of a model trained for a third of the
steps on the uniform mixture, same seed). The held-out loss of each component is measured
on sequences the training data does not contain. Results (every run, and the mean, range
and paired difference to `natural` over the seeds) go to bench/adaptive/results.json, the
summary table to stdout, plots to docs/images/.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.tiny_lm import TinyLM, token_losses, warmup_cosine  # noqa: E402
from mixplane.load import MixtureDataset  # noqa: E402
from mixplane.load.adaptive.feedback import Feedback  # noqa: E402
from mixplane.load.adaptive.weight_log import trajectories  # noqa: E402
from mixplane.load.tools.synthetic import write_catalog  # noqa: E402
from mixplane.load.torch import torch_loader  # noqa: E402
from mixplane.mix.policy.ado import EARLIER  # noqa: E402

VOCAB = 256
SEQ_LEN = 64
BATCH = 16
COMPONENTS = ("noise", "easy", "hard", "text")
LEARNABLE = ("easy", "hard", "text")
# Documents of each component (about 100 tokens each): natural shares 1 : 1 : 1.5 : 4.
DOCUMENTS = {"noise": 3000, "easy": 3000, "hard": 4500, "text": 12000}


# -- the data ------------------------------------------------------------------------------


class Chain:
    """A Markov chain over tokens 1..255 with `successors` choices per context and their
    probabilities. The context is the last token, or with `order` 2 also the token before it,
    of which only the value modulo `older` counts (so the contexts stay learnable)."""

    def __init__(self, order: int, successors: int, probabilities, seed: int, older: int = 1):
        rng = np.random.default_rng(seed)
        contexts = (VOCAB - 1) * (older if order == 2 else 1)
        self.order = order
        self.older = older
        self.next = rng.integers(1, VOCAB, (contexts, successors))
        self.cumulative = np.cumsum(probabilities(rng, contexts, successors), axis=1)
        self.cumulative[:, -1] = 1.0

    def __call__(self, rng: np.random.Generator, count: int) -> np.ndarray:
        draws = rng.random(count).tolist()
        nexts, cumulative = self.next.tolist(), self.cumulative.tolist()
        context = [int(v) for v in rng.integers(1, VOCAB, self.order)]
        out = []
        older = self.older
        for u in draws:
            index = context[-1] - 1
            if len(context) == 2:
                index += (context[0] % older) * (VOCAB - 1)
            row = cumulative[index]
            choice = 0
            while row[choice] < u:
                choice += 1
            token = nexts[index][choice]
            out.append(token)
            context = context[1:] + [token]
        return np.array(out, dtype=np.int64)


def noise(rng: np.random.Generator, count: int) -> np.ndarray:
    return rng.integers(1, VOCAB, count)


def generators() -> dict:
    def fixed(p):
        return lambda rng, rows, k: np.tile(np.array(p), (rows, 1))

    def dirichlet(rng, rows, k):
        return rng.dirichlet(np.ones(k), rows)

    zipf = 1.0 / np.arange(1, 33) ** 1.1
    return {
        "noise": noise,
        "easy": Chain(1, 2, fixed([0.9, 0.1]), seed=11),
        "hard": Chain(2, 4, dirichlet, seed=12, older=16),
        "text": Chain(1, 32, fixed(zipf / zipf.sum()), seed=13),
    }


def build_catalog(folder: Path) -> str:
    made = generators()
    datasets = {
        name: {
            "documents": DOCUMENTS[name],
            "seed": index + 1,
            "source": name,
            "mean_tokens": 100,
            "vocab_size": VOCAB,
            "eos_id": 0,
            "tokens": made[name],
        }
        for index, name in enumerate(COMPONENTS)
    }
    return write_catalog(str(folder), datasets)


def held_out(sequences: int = 64) -> dict[str, torch.Tensor]:
    """Sequences of each component from other random streams than the training data."""
    made = generators()
    rng = np.random.default_rng(999)
    return {
        name: torch.from_numpy(made[name](rng, sequences * SEQ_LEN).reshape(sequences, SEQ_LEN))
        for name in COMPONENTS
    }


# -- the model ---------------------------------------------------------------------------


def tiny_lm() -> TinyLM:
    """The model of every run: 3 layers of width 96, about 390k parameters."""
    return TinyLM(VOCAB, SEQ_LEN, dim=96, layers=3, heads=4)


@torch.no_grad()
def evaluate(model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, float]:
    model.eval()
    losses = {name: float(token_losses(model, ids).mean()) for name, ids in data.items()}
    model.train()
    return losses


# -- the runs ----------------------------------------------------------------------------


def mixture(catalog: str, weights: str, policy: dict | None, seed: int) -> dict:
    components = {name: {"where": f"source = '{name}'"} for name in COMPONENTS}
    if weights == "uniform":
        components = {name: spec | {"weight": 1.0} for name, spec in components.items()}
    spec = {
        "catalog": catalog,
        "seq_len": SEQ_LEN,
        "seed": 7 + seed,
        "global_batch_size": BATCH,
        "components": components,
        "weighting": "natural" if weights == "natural" else "explicit",
    }
    if policy is not None:
        spec["policy"] = policy
    return spec


def train(spec: dict, steps: int, eval_every: int, seed: int) -> dict:
    data = held_out()
    torch.manual_seed(seed)
    model = tiny_lm()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine(100, steps))
    dataset = MixtureDataset(spec, dtype="int64", boundaries="none")
    loader = torch_loader(dataset, BATCH)
    feedback = Feedback(loader) if spec.get("policy") else None
    mixer = dataset.adaptive
    prior = dict(zip(mixer.names, mixer.policy.prior.tolist(), strict=True)) if mixer else None
    curve = []
    started = time.perf_counter()
    for step, batch in enumerate(loader):
        if step == steps:
            break
        losses = token_losses(model, batch["input_ids"])
        if feedback is not None:
            feedback.observe(step, losses.detach(), batch)
        optimizer.zero_grad()
        losses.mean().backward()
        optimizer.step()
        schedule.step()
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            curve.append({"step": step + 1, **evaluate(model, data)})
    seconds = time.perf_counter() - started
    final = curve[-1]
    return {
        "eval_every": eval_every,
        "seconds": seconds,
        "final": {name: final[name] for name in COMPONENTS},
        "learnable_mean": float(np.mean([final[name] for name in LEARNABLE])),
        "curve": curve,
        "weight_log": dataset.weight_log(),
        "prior": prior,
        "parameters": sum(p.numel() for p in model.parameters()),
    }


RUNS = ("natural", "uniform", "ado", "ado_earlier", "odm", "excess_loss")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="runs trained at once")
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "adaptive" / "results.json")
    parser.add_argument("--images", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument(
        "--cache",
        type=Path,
        help="keep each finished run here, and take runs of the same plan from it (a run "
        "is a function of its mixture, steps and seed, on the same code)",
    )
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="mixplane-adaptive-"))
    started = time.perf_counter()
    catalog = build_catalog(folder)
    print(f"data in {time.perf_counter() - started:.1f} s: {folder}", file=sys.stderr)

    base = {"update_every": 50, "warmup_steps": 200, "min_weight": 0.01}
    plans: dict[tuple[str, int], tuple[dict, int]] = {}
    for seed in range(args.seeds):
        plans[("natural", seed)] = mixture(catalog, "natural", None, seed), args.steps
        # every component weight 1
        plans[("uniform", seed)] = mixture(catalog, "uniform", None, seed), args.steps
        plans[("ado", seed)] = (
            mixture(catalog, "natural", {"name": "ado", **base}, seed),
            args.steps,
        )
        earlier = {"name": "ado", **base, **EARLIER}
        plans[("ado_earlier", seed)] = mixture(catalog, "natural", earlier, seed), args.steps
        plans[("odm", seed)] = (
            mixture(catalog, "natural", {"name": "odm", **base}, seed),
            args.steps,
        )
        # the reference model of excess_loss: a third of the steps on the uniform mixture
        plans[("reference", seed)] = mixture(catalog, "uniform", None, seed), args.steps // 3
    runs: dict[str, dict[int, dict]] = {name: {} for name in RUNS}
    references: dict[int, dict] = {}
    # One thread a run: runs are independent and deterministic, and a run with two threads
    # on a busy two-core machine is several times slower than two runs with one.
    with ProcessPoolExecutor(
        args.jobs, mp_context=get_context("spawn"), initializer=_one_thread
    ) as pool:
        done = {
            key: cached(args.cache, key, spec, steps, args.eval_every)
            or pool.submit(train, spec, steps, args.eval_every, key[1])
            for key, (spec, steps) in plans.items()
        }
        excess = {}
        for (name, seed), future in done.items():
            run = future.result()
            keep(args.cache, (name, seed), plans[(name, seed)][0], run)
            report(name, seed, run)
            if name != "reference":
                runs[name][seed] = run
                continue
            references[seed] = run["final"]
            policy = {"name": "excess_loss", **base, "reference_losses": run["final"]}
            spec = mixture(catalog, "natural", policy, seed)
            key = ("excess_loss", seed)
            excess[seed] = (
                cached(args.cache, key, spec, args.steps, args.eval_every)
                or pool.submit(train, spec, args.steps, args.eval_every, seed),
                spec,
            )
        for seed, (future, spec) in excess.items():
            run = future.result()
            keep(args.cache, ("excess_loss", seed), spec, run)
            runs["excess_loss"][seed] = run | {"reference_losses": references[seed]}
            report("excess_loss", seed, runs["excess_loss"][seed])

    summary = summarize(runs)
    settings = {"steps": args.steps, "seeds": args.seeds, "eval_every": args.eval_every}
    settings |= {"batch": BATCH, "policy": base}
    args.out.write_text(json.dumps({"settings": settings, "summary": summary, "runs": runs}))
    print(table(summary))
    plot({name: seeds[0] for name, seeds in runs.items()}, runs, args.images)
    print(f"written {args.out}", file=sys.stderr)


def _plan(spec: dict, steps: int, eval_every: int) -> str:
    """What a run is, to match it in the cache (the catalog's folder is a fresh one)."""
    return json.dumps({**spec, "catalog": None, "steps": steps, "eval_every": eval_every})


def cached(folder: Path | None, key: tuple[str, int], spec: dict, steps: int, every: int):
    """A finished future holding the run of this plan kept in `folder`, or None."""
    path = folder / f"{key[0]}-{key[1]}.json" if folder else None
    if path is None or not path.exists():
        return None
    kept = json.loads(path.read_text())
    if kept["plan"] != _plan(spec, steps, every):
        return None
    future: Future = Future()
    future.set_result(kept["run"])
    return future


def keep(folder: Path | None, key: tuple[str, int], spec: dict, run: dict) -> None:
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        steps, every = run["curve"][-1]["step"], run["eval_every"]
        record = {"plan": _plan(spec, steps, every), "run": run}
        (folder / f"{key[0]}-{key[1]}.json").write_text(json.dumps(record))


def _one_thread() -> None:
    torch.set_num_threads(1)


def report(name: str, seed: int, run: dict) -> None:
    losses = ", ".join(f"{c} {run['final'][c]:.3f}" for c in COMPONENTS)
    print(
        f"{name:11s} seed {seed}: learnable mean {run['learnable_mean']:.4f} ({losses}); "
        f"{run['seconds']:.0f} s",
        file=sys.stderr,
    )


def summarize(runs: dict[str, dict[int, dict]]) -> dict[str, dict]:
    """Per run: the mean and range over seeds of each held-out loss and of the learnable
    mean, and the learnable mean's paired difference to `natural` (same seed)."""
    summary = {}
    for name, seeds in runs.items():
        values = {c: [seeds[s]["final"][c] for s in sorted(seeds)] for c in COMPONENTS}
        values["learnable_mean"] = [seeds[s]["learnable_mean"] for s in sorted(seeds)]
        natural = runs["natural"]
        diffs = [seeds[s]["learnable_mean"] - natural[s]["learnable_mean"] for s in sorted(seeds)]
        summary[name] = {
            key: {"mean": float(np.mean(v)), "min": float(min(v)), "max": float(max(v))}
            for key, v in values.items()
        }
        summary[name]["vs_natural"] = {
            "mean": float(np.mean(diffs)),
            "min": float(min(diffs)),
            "max": float(max(diffs)),
            "seeds_better": sum(d < 0 for d in diffs),
            "seeds": len(diffs),
        }
        summary[name]["seconds"] = float(np.mean([seeds[s]["seconds"] for s in seeds]))
    return summary


def table(summary: dict[str, dict]) -> str:
    """The docs' table: mean [min, max] over seeds, and the paired difference to natural."""

    def cell(stats: dict, digits: int = 3) -> str:
        return f"{stats['mean']:.{digits}f} [{stats['min']:.{digits}f}, {stats['max']:.{digits}f}]"

    rows = [
        "| run | easy | hard | text | mean of the three | vs natural (paired) | noise |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, stats in summary.items():
        versus = stats["vs_natural"]
        paired = "(baseline)"
        if name != "natural":
            paired = (
                f"{versus['mean']:+.4f} [{versus['min']:+.4f}, {versus['max']:+.4f}]; "
                f"lower in {versus['seeds_better']} of {versus['seeds']} seeds"
            )
        rows.append(
            f"| {name} | {cell(stats['easy'])} | {cell(stats['hard'])} | {cell(stats['text'])} "
            f"| {cell(stats['learnable_mean'], 4)} | {paired} | {cell(stats['noise'])} |"
        )
    return "\n".join(rows)


def plot(runs: dict[str, dict], every_seed: dict[str, dict[int, dict]], folder: Path) -> None:
    """The weights of each adaptive run of the first seed; the held-out losses of every
    run, averaged over the seeds."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    folder.mkdir(parents=True, exist_ok=True)
    adaptive = [name for name in runs if runs[name]["weight_log"]]
    if not adaptive:
        return  # too few steps for any weight change
    figure, axes = pyplot.subplots(1, len(adaptive), figsize=(4 * len(adaptive), 3.2))
    for axis, name in zip(np.atleast_1d(axes), adaptive, strict=True):
        found = trajectories(runs[name]["weight_log"], runs[name]["prior"])
        steps = found["steps"] + [runs[name]["curve"][-1]["step"]]
        for component in COMPONENTS:
            values = found["weights"][component]
            axis.step(steps, values + values[-1:], where="post", label=component)
        axis.set_title(name)
        axis.set_xlabel("step")
        axis.set_ylim(0, 1)
    np.atleast_1d(axes)[0].set_ylabel("weight")
    np.atleast_1d(axes)[0].legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(folder / "adaptive-weights.png", dpi=110)
    pyplot.close(figure)

    figure, axes = pyplot.subplots(1, len(LEARNABLE), figsize=(4 * len(LEARNABLE), 3.2))
    for axis, component in zip(axes, LEARNABLE, strict=True):
        for name, seeds in every_seed.items():
            curves = [[point[component] for point in run["curve"]] for run in seeds.values()]
            steps = [point["step"] for point in next(iter(seeds.values()))["curve"]]
            axis.plot(steps, np.mean(curves, axis=0), label=name)
        axis.set_title(f"held-out loss: {component} (mean of seeds)")
        axis.set_xlabel("step")
    axes[0].legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(folder / "adaptive-loss.png", dpi=110)
    pyplot.close(figure)


if __name__ == "__main__":
    main()
