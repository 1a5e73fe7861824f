"""CLIP-style training on an image-text mixture, with the loading recipe as a user writes it:
a tiny image encoder and text encoder learn with the contrastive loss from batches of two
DataLoader workers; a run killed with SIGKILL after a checkpoint and resumed in a new process
gets exactly the batches of an uninterrupted run.

This file is also the training script: `python test_clip_smoke.py WORKDIR EPOCHS`, run in
the folder of `mixture.yaml` and `tokenizer.json`, executes the README's image-text block
with the names it leaves to the user, and logs
`step digest loss` per step to WORKDIR/batches.log.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from readme_blocks import readme_block

EPOCHS = 2
# photos: the 120 English samples of 240 (all at least 256 wide); art: 72; batches of 16
BATCHES_PER_EPOCH = 12
CHECKPOINT_EVERY = 10
KILL_AFTER = 15  # steps: in the second epoch, the checkpoint in the first
EMBED = 32


def recipe() -> str:
    """The README's image-text loading block, as written."""
    return readme_block("python", "image_text_loader(dataset")


def train(workdir: str, epochs: int) -> None:
    """The training process: a tiny CLIP around the recipe."""
    import hashlib

    import torch
    from tokenizers import Tokenizer

    torch.manual_seed(0)
    torch.set_num_threads(1)  # a tiny model: threads would only contend with the workers
    tokenizer = Tokenizer.from_file("tokenizer.json")
    vocab = tokenizer.get_vocab_size()
    images = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, kernel_size=4, stride=4),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, kernel_size=3, stride=2),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, EMBED),
    )
    words = torch.nn.Embedding(vocab, EMBED, padding_idx=0)
    model = torch.nn.ModuleDict({"images": images, "words": words})
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    path = os.path.join(workdir, "checkpoint.pt")
    checkpoint = torch.load(path) if os.path.exists(path) else None
    step = 0
    if checkpoint:
        model.load_state_dict(checkpoint["model"]["weights"])
        optimizer.load_state_dict(checkpoint["model"]["optimizer"])
        step = checkpoint["model"]["step"]
    log = open(os.path.join(workdir, "batches.log"), "a")  # noqa: SIM115 (open for the run)

    def train_step(batch: dict) -> None:
        nonlocal step
        ids = batch["input_ids"]
        image = torch.nn.functional.normalize(images(batch["images"]), dim=-1)
        mask = (ids != 0).unsqueeze(-1).float()
        text = (words(ids) * mask).sum(1) / mask.sum(1).clamp(min=1)
        text = torch.nn.functional.normalize(text, dim=-1)
        logits = image @ text.T / 0.07
        labels = torch.arange(len(ids))
        loss = (
            torch.nn.functional.cross_entropy(logits, labels)
            + torch.nn.functional.cross_entropy(logits.T, labels)
        ) / 2
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        digest = hashlib.sha256(batch["images"].numpy().tobytes() + ids.numpy().tobytes())
        log.write(f"{step} {digest.hexdigest()[:16]} {loss.item():.6f}\n")
        log.flush()
        time.sleep(0.02)  # a slower model: the workers read further ahead

    def time_to_save() -> bool:
        return step % CHECKPOINT_EVERY == 0

    def save(checkpoint: dict) -> None:
        if checkpoint["model"] is ...:
            checkpoint["model"] = {
                "weights": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "step": step,
            }
        torch.save(checkpoint, path + ".partial")
        os.replace(path + ".partial", path)

    names = {
        "rank": 0,
        "world_size": 1,
        "checkpoint": checkpoint,
        "epochs": epochs,
        "train_step": train_step,
        "time_to_save": time_to_save,
        "save": save,
    }
    exec(recipe(), names)


if __name__ == "__main__":
    train(sys.argv[1], int(sys.argv[2]))
    sys.exit(0)

import psutil  # noqa: E402 (the test's imports; the script above needs none of them)
import pytest  # noqa: E402
import yaml  # noqa: E402

from mixplane.catalog import Catalog  # noqa: E402
from mixplane.load.images.synthetic import caption_tokenizer, write_image_catalog  # noqa: E402


@pytest.fixture(scope="module")
def mixture(tmp_path_factory) -> str:
    """The README's mixture block as written, in a folder with its catalog (`photos`: half
    of the captions English, sides from 256; `art`: small images) and a tokenizer."""
    folder = tmp_path_factory.mktemp("clip")
    write_image_catalog(
        str(folder),
        {
            "photos": {"samples": 240, "seed": 1, "shards": 2, "size": (256, 288)},
            "art": {"samples": 72, "seed": 2, "shards": 2, "size": (48, 80)},
        },
    )
    caption_tokenizer(("photos", "art")).save(str(folder / "tokenizer.json"))
    block = readme_block("yaml", "kind: image_text")
    spec = yaml.safe_load(block)
    assert spec["catalog"] == "catalog.duckdb"  # relative to the run's folder
    where = spec["components"]["photos"]["where"]
    selected = Catalog(folder / "catalog.duckdb").select(where, ["photos"])
    assert (selected.documents, selected.parts[0].total_documents) == (120, 240)
    assert "where" not in spec["components"]["art"]
    (folder / "mixture.yaml").write_text(block)
    return str(folder)


def run(mixture: str, workdir: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, __file__, str(workdir), str(EPOCHS)],
        cwd=mixture,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def logged(workdir: Path) -> list[tuple[int, str, float]]:
    path = workdir / "batches.log"
    if not path.exists():
        return []
    rows = [line.split() for line in path.read_text().splitlines()]
    return [(int(step), digest, float(loss)) for step, digest, loss in rows]


def finish(process: subprocess.Popen) -> None:
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 0, output.decode()


def test_clip_training_learns_and_resumes_exactly_after_sigkill(mixture, tmp_path):
    steps = EPOCHS * BATCHES_PER_EPOCH
    whole = tmp_path / "whole"
    whole.mkdir()
    finish(run(mixture, whole))
    rows = logged(whole)
    assert [step for step, _, _ in rows] == list(range(1, steps + 1))
    losses = [loss for _, _, loss in rows]
    assert all(math.isfinite(loss) for loss in losses)
    assert sum(losses[-6:]) < sum(losses[:6])  # the contrastive loss goes down
    expected = {step: digest for step, digest, _ in rows}

    killed = tmp_path / "killed"
    killed.mkdir()
    process = run(mixture, killed)
    deadline = time.monotonic() + 120
    while (
        len(logged(killed)) < KILL_AFTER and process.poll() is None and time.monotonic() < deadline
    ):
        time.sleep(0.01)
    assert process.poll() is None, "the run ended before it could be killed"
    workers = psutil.Process(process.pid).children(recursive=True)
    assert len(workers) >= 2
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    before = logged(killed)
    assert KILL_AFTER <= len(before) < steps

    finish(run(mixture, killed))  # the same command resumes from the last checkpoint
    after = logged(killed)[len(before) :]
    checkpoint_step = (len(before) // CHECKPOINT_EVERY) * CHECKPOINT_EVERY
    assert [step for step, _, _ in after] == list(range(checkpoint_step + 1, steps + 1))
    for step, digest, _ in before + after:
        assert digest == expected[step], f"step {step} differs from the uninterrupted run"
