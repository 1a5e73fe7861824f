"""Conversations, plain texts and a small BPE tokenizer with a chat template, made locally.

The tokenizer is trained with the `tokenizers` library on the words the data uses and saved
as a Hugging Face tokenizer folder: `tokenizer.json` and a `tokenizer_config.json` holding
a ChatML `chat_template`, as models publish them. Nothing is downloaded.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
WORDS = [
    *("the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "hello", "world"),
    *("how", "are", "you", "fine", "thanks", "what", "is", "your", "name", "my", "tea"),
    *("cup", "river", "stone", "light", "green", "red", "blue", "small", "large", "city"),
]


def sentence(rng: random.Random, low: int = 2, high: int = 9) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def write_tokenizer(folder: Path) -> Path:
    """A ByteLevel BPE tokenizer folder with the ChatML template; returns the folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    rng = random.Random(0)
    tokenizer.train_from_iterator([sentence(rng) for _ in range(500)], trainer)
    tokenizer.save(str(folder / "tokenizer.json"))
    settings = {"chat_template": CHATML, "eos_token": "<|endoftext|>"}
    (folder / "tokenizer_config.json").write_text(json.dumps(settings))
    return folder


def conversation(rng: random.Random, turns: int) -> list[dict]:
    messages = [{"role": "system", "content": sentence(rng)}] if rng.random() < 0.5 else []
    for _ in range(turns):
        messages.append({"role": "user", "content": sentence(rng)})
        messages.append({"role": "assistant", "content": sentence(rng, 1, 30)})
    return messages


def write_chats(path: Path, count: int, seed: int) -> list[dict]:
    """`count` conversations of 1 to 3 exchanges as JSON Lines; returns the records."""
    rng = random.Random(seed)
    records = [
        {"id": f"chat-{n}", "messages": conversation(rng, rng.randint(1, 3)), "source": "chat"}
        for n in range(count)
    ]
    write_lines(path, records)
    return records


def write_texts(path: Path, count: int, seed: int) -> list[dict]:
    """`count` plain documents as JSON Lines; returns the records."""
    rng = random.Random(seed)
    records = [
        {"id": f"web-{n}", "text": ". ".join(sentence(rng) for _ in range(rng.randint(1, 8)))}
        for n in range(count)
    ]
    write_lines(path, records)
    return records


def write_lines(path: Path, records: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [line if isinstance(line, str) else json.dumps(line) for line in records]
    path.write_text("\n".join(lines) + "\n")


def trained_text(messages: list[dict], roles: tuple[str, ...] = ("assistant",)) -> str:
    """What the loss is taken on, decoded without special tokens: each trained turn's text
    and the newline after its `<|im_end|>`."""
    return "".join(m["content"] + "\n" for m in messages if m["role"] in roles)
