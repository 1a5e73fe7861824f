"""Adaptive mixing on a small causal LM: four synthetic components of known difficulty.

    .venv/bin/python bench/adaptive/experiment.py --steps 3000

Components (vocabulary 256, documents of about 100 tokens, written by the store's writer and
registered in a real catalog), with natural shares by size:

- `noise`: uniform random tokens: nothing to learn (the best loss is ln 255 = 5.54);
- `easy`: a first-order Markov chain with two successors per token (0.9 / 0.1): learnt fast;
- `hard`: a second-order chain (the successor depends on the last token and on the one
  before it modulo 16: 4,080 contexts, four successors each with Dirichlet(1)
  probabilities): learnt more slowly;
- `text`: a large first-order chain with 32 Zipf-distributed successors, text-like.

Every run trains the same model from the same seed on the same token budget, through
`MixtureDataset` and `torch_loader`; adaptive runs call `Feedback.observe` every step.
Runs: `natural` (static, shares by size), `uniform`, `ado`, `doremi` (reference losses: the
held-out losses of a model trained for a third of the steps on the uniform mixture) and
`odm`. The held-out loss of each component is measured on sequences the training data does
not contain. Results go to bench/adaptive/results.json, plots to docs/images/.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from mixplane.load import MixtureDataset
from mixplane.load.feedback import Feedback
from mixplane.load.synthetic import write_catalog
from mixplane.load.torch_adapter import torch_loader
from mixplane.load.weight_log import trajectories

ROOT = Path(__file__).resolve().parents[2]
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


class TinyLM(nn.Module):
    """A pre-norm causal transformer: 3 layers of width 96, about 390k parameters."""

    def __init__(self, dim: int = 96, layers: int = 3, heads: int = 4):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, dim)
        self.position = nn.Embedding(SEQ_LEN, dim)
        layer = nn.TransformerEncoderLayer(
            dim, heads, 4 * dim, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, VOCAB)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(SEQ_LEN))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        length = ids.shape[1]
        x = self.embed(ids) + self.position(torch.arange(length))
        x = self.blocks(x, mask=self.mask[:length, :length], is_causal=True)
        return self.head(self.norm(x))


def token_losses(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """The unreduced next-token loss, [batch, seq_len - 1]."""
    logits = model(ids[:, :-1])
    return nn.functional.cross_entropy(
        logits.reshape(-1, VOCAB), ids[:, 1:].reshape(-1), reduction="none"
    ).reshape(ids.shape[0], -1)


@torch.no_grad()
def evaluate(model: nn.Module, data: dict[str, torch.Tensor]) -> dict[str, float]:
    model.eval()
    losses = {name: float(token_losses(model, ids).mean()) for name, ids in data.items()}
    model.train()
    return losses


# -- the runs ----------------------------------------------------------------------------


def mixture(catalog: str, weights: str, policy: dict | None) -> dict:
    components = {name: {"where": f"source = '{name}'"} for name in COMPONENTS}
    if weights == "uniform":
        components = {name: spec | {"weight": 1.0} for name, spec in components.items()}
    spec = {
        "catalog": catalog,
        "seq_len": SEQ_LEN,
        "seed": 7,
        "global_batch_size": BATCH,
        "components": components,
        "weighting": "natural" if weights == "natural" else "explicit",
    }
    if policy is not None:
        spec["policy"] = policy
    return spec


def train(spec: dict, steps: int, data: dict, eval_every: int) -> dict:
    torch.manual_seed(0)
    model = TinyLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 100) * 0.5 * (1 + math.cos(math.pi * s / steps))
    )
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
        "seconds": seconds,
        "final": {name: final[name] for name in COMPONENTS},
        "learnable_mean": float(np.mean([final[name] for name in LEARNABLE])),
        "curve": curve,
        "weight_log": dataset.weight_log(),
        "prior": prior,
        "parameters": sum(p.numel() for p in model.parameters()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "adaptive" / "results.json")
    parser.add_argument("--images", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    torch.set_num_threads(2)
    folder = Path(tempfile.mkdtemp(prefix="mixplane-adaptive-"))
    started = time.perf_counter()
    catalog = build_catalog(folder)
    print(f"data in {time.perf_counter() - started:.1f} s: {folder}", file=sys.stderr)
    data = held_out()

    runs: dict[str, dict] = {}
    base = {"update_every": 50, "warmup_steps": 200, "min_weight": 0.01}
    plans = {
        "natural": mixture(catalog, "natural", None),
        "uniform": mixture(catalog, "uniform", None),  # every component weight 1
        "ado": mixture(catalog, "natural", {"name": "ado", **base}),
        "odm": mixture(catalog, "natural", {"name": "odm", **base}),
    }
    for name, spec in plans.items():
        runs[name] = train(spec, args.steps, data, args.eval_every)
        report(name, runs[name])
    reference = train(plans["uniform"], args.steps // 3, data, args.eval_every)
    references = reference["final"]
    doremi = {"name": "doremi", **base, "reference_losses": references}
    runs["doremi"] = train(mixture(catalog, "natural", doremi), args.steps, data, args.eval_every)
    runs["doremi"]["reference_losses"] = references
    report("doremi", runs["doremi"])

    settings = {"steps": args.steps, "eval_every": args.eval_every, "batch": BATCH}
    args.out.write_text(json.dumps({"settings": settings, "runs": runs}, indent=1))
    plot(runs, args.images)
    print(f"written {args.out}", file=sys.stderr)


def report(name: str, run: dict) -> None:
    losses = ", ".join(f"{c} {run['final'][c]:.3f}" for c in COMPONENTS)
    print(
        f"{name:8s} learnable mean {run['learnable_mean']:.4f} ({losses}); {run['seconds']:.0f} s",
        file=sys.stderr,
    )


def plot(runs: dict[str, dict], folder: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    folder.mkdir(parents=True, exist_ok=True)
    adaptive = [name for name in runs if runs[name]["weight_log"]]
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
        for name, run in runs.items():
            steps = [point["step"] for point in run["curve"]]
            axis.plot(steps, [point[component] for point in run["curve"]], label=name)
        axis.set_title(f"held-out loss: {component}")
        axis.set_xlabel("step")
    axes[0].legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(folder / "adaptive-loss.png", dpi=110)
    pyplot.close(figure)


if __name__ == "__main__":
    main()
