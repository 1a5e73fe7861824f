"""Tokenizing conversations: the chat template's tokens, a loss mask on the assistant's
turns, bad records quarantined, and shards of format version 2 that older readers refuse."""

from __future__ import annotations

import json
import subprocess
import types
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from chat_data import CHATML, trained_text, write_chats, write_lines, write_texts, write_tokenizer

from mixplane.errors import InputError, MixplaneError
from mixplane.store import ShardReader, TokenizedDataset
from mixplane.store.megatron import export_megatron
from mixplane.tokenize import dataset_tokenizer, tokenize_dataset

ROOT = Path(__file__).parent.parent
BEFORE_MASKS = "415cee9"  # the last commit whose readers knew only token format version 1
BAD = [
    {"id": "no-messages", "text": "plain"},
    {"id": "empty", "messages": []},
    {"id": "bot", "messages": [{"role": "bot", "content": "hi"}]},
    {"id": "no-answer", "messages": [{"role": "user", "content": "hello"}]},
    {"id": "not-text", "messages": [{"role": "user", "content": 3}]},
    "{not json",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("chat")
    tokenizer = write_tokenizer(folder / "tokenizer")
    records = write_chats(folder / "chats" / "a.jsonl", 40, seed=1)
    write_lines(folder / "chats" / "b.jsonl", [*BAD, *records[:3]])
    config = {
        "input": str(folder / "chats"),
        "output": str(folder / "tokens"),
        "tokenizer": str(tokenizer / "tokenizer.json"),
        "chat": {},
    }
    result = tokenize_dataset(config)
    return {
        "folder": folder,
        "tokenizer": tokenizer,
        "records": records,
        "result": result,
        "dataset": TokenizedDataset(folder / "tokens"),
        "config": config,
    }


def documents(dataset: TokenizedDataset):
    """Every document's id, tokens and mask, in dataset order."""
    for number in range(len(dataset.shards)):
        shard = dataset.shard(number)
        ids = shard.metadata(["id"]).column("id").to_pylist()
        for index, doc_id in enumerate(ids):
            yield doc_id, shard.document(index), shard.document_mask(index)


def test_tokens_are_the_templates_and_the_mask_covers_the_assistant_turns(run):
    """The tokens are what transformers' apply_chat_template gives with the same template;
    the tokens trained on decode to exactly the assistant turns (each with its end)."""
    from transformers import PreTrainedTokenizerFast

    reference = PreTrainedTokenizerFast(
        tokenizer_file=str(run["tokenizer"] / "tokenizer.json"), chat_template=CHATML
    )
    tokenizer = dataset_tokenizer(run["dataset"])
    by_id = {record["id"]: record["messages"] for record in run["records"]}
    seen = []
    for doc_id, tokens, mask in documents(run["dataset"]):
        expected = reference.apply_chat_template(by_id[doc_id], tokenize=True)
        expected = expected["input_ids"] if hasattr(expected, "keys") else expected
        assert tokens.tolist() == list(expected), doc_id
        assert set(np.unique(mask).tolist()) == {0, 1} and mask[0] == 0
        assert tokenizer.decode(tokens[mask == 1]) == trained_text(by_id[doc_id])
        # Each trained run ends with <|im_end|> and its newline: the model learns to stop.
        end = reference.convert_tokens_to_ids("<|im_end|>")
        runs = np.flatnonzero(np.diff(np.concatenate(([0], mask, [0]))) == -1)
        assert all(tokens[stop - 2] == end for stop in runs)
        seen.append(doc_id)
    assert sorted(seen) == sorted(
        [r["id"] for r in run["records"]] + ["chat-0", "chat-1", "chat-2"]
    )


def test_bad_records_are_quarantined_with_what_is_wrong(run):
    stats = run["result"].stats
    assert stats["documents"] + stats["quarantined"] == 40 + len(BAD) + 3
    quarantine = pq.read_table(run["folder"] / "tokens" / "_quarantine" / "task-00001.parquet")
    locations, texts = quarantine["location"].to_pylist(), quarantine["error"].to_pylist()
    errors = dict(zip(locations, texts, strict=True))
    url = str(run["folder"] / "chats" / "b.jsonl")
    assert errors == {
        f"{url}:1": "record has no field 'messages': its fields are id, text",
        f"{url}:2": "field 'messages' is an empty list: no message",
        f"{url}:3": "message 0 has role 'bot', not one of system, user, assistant, tool "
        "(set chat.roles to allow it)",
        f"{url}:4": "no message of a trained role (assistant): nothing to train on",
        f"{url}:5": "message 0 has no 'content' text",
        f"{url}:6": errors[f"{url}:6"],
    }
    assert errors[f"{url}:6"].startswith("invalid JSON")
    assert quarantine["raw"][0].as_py() == json.dumps(BAD[0]).encode() + b"\n"


def test_train_on_every_role_and_prompt_response_pairs(run, tmp_path):
    tokenizer = str(run["tokenizer"] / "tokenizer.json")
    every = tokenize_dataset(
        run["config"] | {"output": str(tmp_path / "all"), "chat": {"train_on": "all"}}
    )
    assert every.stats["documents"] == 44  # the record without an answer has turns to train on
    for _, _, mask in documents(TokenizedDataset(tmp_path / "all")):
        assert mask[0] == 0 and mask[1:].all()

    pairs = [{"q": "hello world", "a": "fine thanks"}, {"q": "what is your name", "a": "tea"}]
    write_lines(tmp_path / "pairs" / "p.jsonl", pairs)
    config = {
        "input": str(tmp_path / "pairs"),
        "output": str(tmp_path / "pairs-out"),
        "tokenizer": tokenizer,
        "eos": True,
        "chat": {"prompt_key": "q", "response_key": "a"},
    }
    tokenize_dataset(config)
    dataset = TokenizedDataset(tmp_path / "pairs-out")
    decoder = dataset_tokenizer(dataset)
    eos = dataset.tokenizer_info["eos_id"]
    for pair, (_, tokens, mask) in zip(pairs, documents(dataset), strict=True):
        assert tokens[-1] == eos and mask[-1] == 1  # the EOS after the answer is trained on
        assert decoder.decode(tokens[mask == 1]) == pair["a"] + "\n"


def test_a_template_whose_turns_cannot_be_told_apart_is_named_with_the_record(run, tmp_path):
    """Turns glued together merge into tokens that straddle them: no boundary is honest."""
    write_lines(
        tmp_path / "c" / "c.jsonl",
        [{"messages": [{"role": "user", "content": "th"}, {"role": "assistant", "content": "e"}]}],
    )
    glued = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    config = run["config"] | {"input": str(tmp_path / "c"), "output": str(tmp_path / "o")}
    with pytest.raises(MixplaneError, match=r"c\.jsonl:1: the tokens of the first 1 messages"):
        tokenize_dataset(config | {"chat": {"template": glued}})
    counted = "{{ messages | length }}{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    with pytest.raises(MixplaneError, match=r"c\.jsonl:1: the chat template renders the first 1"):
        tokenize_dataset(config | {"chat": {"template": counted}})


def test_masked_shards_are_version_2_with_the_mask_hashed(run, tmp_path):
    dataset = run["dataset"]
    assert dataset.manifest["format"] == {"name": "mixplane-tokens", "version": 2}
    assert dataset.masked and dataset.manifest["chat_template"] == CHATML
    stem = run["folder"] / "tokens" / dataset.shard_names[0]
    shard = ShardReader(stem)
    assert shard.version == 2
    assert (stem.parent / (stem.name + ".mask")).stat().st_size == shard.n_tokens
    record = dataset.shards[0]["files"]["mask"]
    assert record["hash"].startswith("xxh3_128:")
    assert {o["path"] for o in dataset.manifest["outputs"]} >= {stem.name + ".mask"}
    dataset.verify()

    # Plain text stays version 1, without masks.
    write_texts(tmp_path / "web" / "w.jsonl", 5, seed=2)
    plain_config = run["config"] | {"input": str(tmp_path / "web"), "output": str(tmp_path / "p")}
    tokenize_dataset(plain_config | {"chat": None})
    plain = TokenizedDataset(tmp_path / "p")
    assert plain.manifest["format"]["version"] == 1 and not plain.masked
    assert ShardReader(tmp_path / "p" / plain.shard_names[0]).mask is None

    # A changed mask byte is caught by its hash; a truncated one on opening.
    mask_file = stem.parent / (stem.name + ".mask")
    original = mask_file.read_bytes()
    try:
        mask_file.write_bytes(bytes([1 - original[0]]) + original[1:])
        with pytest.raises(MixplaneError, match=r"\.mask does not match the manifest"):
            TokenizedDataset(run["folder"] / "tokens").verify()
        mask_file.write_bytes(original[:-1])
        with pytest.raises(MixplaneError, match=r"\.mask holds \d+ bytes but the shard has"):
            ShardReader(stem)
    finally:
        mask_file.write_bytes(original)


def old_module(path: str, name: str) -> types.ModuleType:
    """A module as it was before masked shards existed (read from git)."""
    shown = subprocess.run(
        ["git", "show", f"{BEFORE_MASKS}:{path}"], cwd=ROOT, capture_output=True, text=True
    )
    if shown.returncode:
        pytest.skip(f"the git history holds no commit {BEFORE_MASKS} (a shallow copy)")
    source = shown.stdout
    module = types.ModuleType(name)
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def test_readers_from_before_masks_refuse_the_new_version(run):
    """Older mixplane refuses fine-tuning shards rather than train on every token."""
    stem = run["folder"] / "tokens" / run["dataset"].shard_names[0]
    header = Path(str(stem) + ".idx").read_bytes()[:24]
    old_format = old_module("src/mixplane/store/format.py", "old_format")
    refused = "token format version 2; this mixplane reads version 1"
    with pytest.raises(MixplaneError, match=refused):
        old_format.decode_header(header, "shard.idx")
    old_dataset = old_module("src/mixplane/store/dataset.py", "old_dataset")
    with pytest.raises(InputError, match=refused):
        old_dataset.check_token_manifest("tokens", run["dataset"].manifest)


def test_megatron_export_refuses_masked_data(run, tmp_path):
    with pytest.raises(MixplaneError, match="cannot carry, so an export would train on every"):
        export_megatron(run["dataset"], str(tmp_path / "out"))
    assert not (tmp_path / "out.bin").exists()


def test_the_cli_tokenizes_conversations(run, cli, tmp_path):
    template = tmp_path / "template.jinja"
    template.write_text(CHATML)
    code, out, err = cli(
        "tokenize", str(run["folder"] / "chats" / "a.jsonl"), str(tmp_path / "cli"),
        "-t", str(run["tokenizer"]), "--train-on", "all", "--chat-template", str(template),
        "--json",
    )  # fmt: skip
    assert code == 0, err
    dataset = TokenizedDataset(tmp_path / "cli")
    assert dataset.masked and dataset.n_documents == 40
    assert dataset.manifest["config"]["chat"]["train_on"] == "all"
    code, out, err = cli(
        "catalog", "register", str(tmp_path / "cli"), "--name", "chat",
        "--catalog", str(tmp_path / "catalog.duckdb"),
    )  # fmt: skip
    assert code == 0, err
    assert "chat@1: 40 documents" in out and "tokens with loss masks in 1 shards" in out


def test_parquet_conversations_and_workers_give_the_same_bytes(run, tmp_path):
    """Conversations from Parquet (a list of structs) tokenize like their JSON Lines, and
    two worker processes (the template sent to each) write the bytes one process writes."""
    import pyarrow as pa

    records = run["records"][:10]
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.Table.from_pylist(records), tmp_path / "pq" / "a.parquet")
    tokenize_dataset(run["config"] | {"input": str(tmp_path / "pq"), "output": str(tmp_path / "q")})
    from_parquet = TokenizedDataset(tmp_path / "q")
    first_ten = list(documents(run["dataset"]))[:10]
    for (doc_id, tokens, mask), (other_id, other_tokens, other_mask) in zip(
        documents(from_parquet), first_ten, strict=True
    ):
        assert doc_id == other_id
        assert np.array_equal(tokens, other_tokens) and np.array_equal(mask, other_mask)

    parallel = run["config"] | {"output": str(tmp_path / "two"), "workers": 2}
    tokenize_dataset(parallel)
    one, two = run["dataset"].manifest, TokenizedDataset(tmp_path / "two").manifest
    assert one["shards"] == two["shards"]  # names, counts and every file's hash
