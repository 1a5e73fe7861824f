"""Fine-tuning data: what the loss masks cost to write and to read.

Tokenizing: N synthetic conversations (ChatML template, a ByteLevel BPE tokenizer trained
here) with `mixplane tokenize` and `chat:` (rendering each conversation up to every message
to find the turns, and writing the `.mask`), against transformers' `apply_chat_template`
over the same conversations (tokens only, no mask, nothing written): conversations per
second, one process each.

Reading: a mixture of 70% plain text and 30% conversations, sequences of 2,048 tokens, read
with `labels: huggingface` (masks copied, labels built); and a mixture of the same shape
over plain text only (no masks), with `labels: huggingface` and without labels: sequences
per second over `--sequences`, the best of three reads each. (The conversations are
shorter documents than the text, so their sequences hold more pieces to plan.)

Results go to bench/results/loader-sft.json.

    python bench/loader/sft.py --conversations 20000
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "it",
    "for",
    "on",
    "with",
    "as",
    "was",
    "at",
    "by",
    "an",
    "be",
    "this",
    "have",
    "from",
]


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def write_data(folder: Path, conversations: int) -> list[list[dict]]:
    rng = random.Random(0)
    chats = []
    for _ in range(conversations):
        messages = [{"role": "system", "content": text(rng, 12)}]
        for _ in range(rng.randint(1, 4)):
            messages.append({"role": "user", "content": text(rng, rng.randint(5, 60))})
            messages.append({"role": "assistant", "content": text(rng, rng.randint(5, 200))})
        chats.append(messages)
    (folder / "chat").mkdir(parents=True)
    (folder / "web").mkdir(parents=True)
    with open(folder / "chat" / "chat.jsonl", "w") as handle:
        for messages in chats:
            handle.write(json.dumps({"messages": messages}) + "\n")
    with open(folder / "web" / "web.jsonl", "w") as handle:
        for _ in range(conversations):
            handle.write(json.dumps({"text": text(rng, rng.randint(50, 800))}) + "\n")
    return chats


def write_tokenizer(folder: Path) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1000,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    rng = random.Random(1)
    tokenizer.train_from_iterator([text(rng, 50) for _ in range(2000)], trainer)
    folder.mkdir(parents=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    settings = {"chat_template": CHATML, "eos_token": "<|endoftext|>"}
    (folder / "tokenizer_config.json").write_text(json.dumps(settings))
    return folder


def read_rate(spec: dict, sequences: int) -> float:
    from mixplane.load import MixtureDataset

    dataset = MixtureDataset(spec, boundaries="position_ids")
    started = time.perf_counter()
    read = 0
    for batch in dataset.batches(64):
        read += len(batch["input_ids"])
        if read >= sequences:
            break
    return read / (time.perf_counter() - started)


def best_rate(spec: dict, sequences: int, repeats: int = 3) -> float:
    """The best of a few reads (the first also pays for planning and a cold page cache)."""
    return max(read_rate(spec, sequences) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=20_000)
    parser.add_argument("--sequences", type=int, default=4096)
    args = parser.parse_args()
    from transformers import PreTrainedTokenizerFast

    from mixplane.catalog import Catalog
    from mixplane.tokenize import tokenize_dataset

    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        chats = write_data(folder, args.conversations)
        tokenizer = write_tokenizer(folder / "tokenizer")
        spec = str(tokenizer / "tokenizer.json")

        started = time.perf_counter()
        tokenize_dataset({"input": str(folder / "chat"), "output": str(folder / "t-chat"),
                          "tokenizer": spec, "chat": {}})  # fmt: skip
        mixplane_seconds = time.perf_counter() - started
        reference = PreTrainedTokenizerFast(tokenizer_file=spec, chat_template=CHATML)
        started = time.perf_counter()
        for messages in chats:
            reference.apply_chat_template(messages, tokenize=True)
        transformers_seconds = time.perf_counter() - started

        for name in ("web", "web2"):
            tokenize_dataset({"input": str(folder / "web"), "output": str(folder / f"t-{name}"),
                              "tokenizer": spec, "eos": True})  # fmt: skip
        catalog = Catalog(str(folder / "catalog.duckdb"))
        for name in ("chat", "web", "web2"):
            catalog.register(str(folder / f"t-{name}"), name=name)
        mixture = {"catalog": catalog.path, "seq_len": 2048, "seed": 1}
        masked = mixture | {
            "labels": "huggingface",
            "components": {
                "web": {"where": "true", "weight": 0.7, "datasets": ["web"]},
                "chat": {"where": "true", "weight": 0.3, "datasets": ["chat"]},
            },
        }
        plain = mixture | {
            "components": {
                "web": {"where": "true", "weight": 0.7, "datasets": ["web"]},
                "chat": {"where": "true", "weight": 0.3, "datasets": ["web2"]},
            }
        }
        results = {
            "conversations": args.conversations,
            "tokenize_conversations_per_second": {
                "mixplane_chat_with_masks": args.conversations / mixplane_seconds,
                "transformers_apply_chat_template": args.conversations / transformers_seconds,
            },
            "read_sequences_per_second": {
                "labels_huggingface_with_masks": best_rate(masked, args.sequences),
                "labels_huggingface_without_masks": best_rate(
                    plain | {"labels": "huggingface"}, args.sequences
                ),
                "no_labels_no_masks": best_rate(plain, args.sequences),
            },
        }
    out = Path(__file__).parent.parent / "results" / "loader-sft.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    rates = results["tokenize_conversations_per_second"]
    print("tokenize ratio mixplane/transformers:", round(
        rates["mixplane_chat_with_masks"] / rates["transformers_apply_chat_template"], 2
    ))  # fmt: skip
    reads = list(results["read_sequences_per_second"].values())
    print("read ratio with/without masks:", round(np.divide(*reads[:2]), 2))


if __name__ == "__main__":
    main()
