"""Fine-tuning conversations mixed with pretraining text: exact token shares, labels that
train on the assistant's tokens only, packed documents that never see each other (checked
against a real transformers model), and masks read from object storage checked by hash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import s3fs
from chat_data import trained_text, write_chats, write_texts, write_tokenizer
from conftest import create_bucket
from readme_blocks import readme_block

from mixplane.catalog import Catalog
from mixplane.errors import ConfigError, MixplaneError
from mixplane.load import MixtureDataset
from mixplane.load.read.labels import IGNORE_INDEX
from mixplane.load.unpacked import UnpackedDataset
from mixplane.load.unpacked.batch import locate
from mixplane.store import ShardReader, TokenizedDataset
from mixplane.tokenize import dataset_tokenizer, tokenize_dataset

SEQ_LEN = 256
ROWS = 120


def tokenize_both(folder: Path, tokenizer: Path, out: str, options: dict | None = None):
    common = {"tokenizer": str(tokenizer / "tokenizer.json"), "storage_options": options or {}}
    tokenize_dataset(common | {"input": str(folder / "web"), "output": f"{out}/web", "eos": True})
    tokenize_dataset(common | {"input": str(folder / "chat"), "output": f"{out}/chat", "chat": {}})


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("sft")
    tokenizer = write_tokenizer(folder / "tokenizer")
    write_texts(folder / "web" / "web.jsonl", 300, seed=1)
    chats = write_chats(folder / "chat" / "chat.jsonl", 150, seed=2)
    tokenize_both(folder, tokenizer, str(folder / "tokens"))
    catalog = Catalog(str(folder / "catalog.duckdb"))
    for name in ("web", "chat"):
        catalog.register(str(folder / "tokens" / name), name=name)
    return {
        "folder": folder,
        "tokenizer": tokenizer,
        "catalog": catalog.path,
        "messages": {record["id"]: record["messages"] for record in chats},
    }


def mixture(catalog: str, labels, **extra) -> dict:
    return {
        "catalog": catalog,
        "seq_len": SEQ_LEN,
        "seed": 5,
        "labels": labels,
        "components": {
            "web": {"where": "source = 'web'", "weight": 0.7},
            "chat": {"where": "source = 'chat'", "weight": 0.3},
        },
    } | extra


def expected_rows(dataset: MixtureDataset, positions: np.ndarray, width: int):
    """From the pieces `explain` names, read straight from the shards: per row, the loss
    mask of every column, and the columns where a document piece starts."""
    masks = np.zeros((len(positions), width), dtype=np.uint8)
    starts = np.zeros((len(positions), width), dtype=bool)
    pieces = []
    for row, position in enumerate(positions.tolist()):
        for piece in dataset.explain(position):
            shard = ShardReader(Path(piece["folder"]) / piece["shard"])
            stored = shard.document_mask(piece["document"])
            begin, stop = piece["tokens"]
            # Past the stored tokens: the EOS the loader appends (not trained on in a
            # conversation, whose template ends the turn its own way).
            appended = 0 if shard.mask is not None else 1
            values = [stored[k] if k < len(stored) else appended for k in range(begin, stop)]
            column = piece["column"]
            masks[row, column : column + len(values)] = values
            starts[row, column] = True
            whole = begin == 0 and stop >= len(stored)
            pieces.append((row, column, stop - begin, piece["component"], piece["id"], whole))
    return masks, starts, pieces


def test_hugging_face_labels_train_on_assistant_tokens_only(data):
    dataset = MixtureDataset(mixture(data["catalog"], "huggingface"), boundaries="both")
    positions = np.arange(ROWS)
    batch = dataset.read_positions(positions)
    tokens, labels = batch["input_ids"], batch["labels"]
    assert tokens.shape == labels.shape == batch["position_ids"].shape == (ROWS, SEQ_LEN)
    assert labels.dtype == np.int64

    # Token shares: every prefix of N sequences holds the conversations within one of 0.3 N.
    chat = dataset.names.index("chat")
    counts = np.cumsum(batch["component"] == chat)
    assert np.all(np.abs(counts - 0.3 * np.arange(1, ROWS + 1)) <= 1)

    masks, starts, pieces = expected_rows(dataset, positions, SEQ_LEN)
    trained = (masks == 1) & ~starts
    assert np.array_equal(labels != IGNORE_INDEX, trained)
    assert np.array_equal(labels[trained], tokens[trained])
    # Pretraining rows train on every token but each document's first.
    web_rows = batch["component"] != chat
    assert np.array_equal(trained[web_rows], ~starts[web_rows])

    # No attention across documents: position_ids restart and document_ids change exactly
    # where a piece starts, and no label there is predicted from the piece before.
    assert np.array_equal(batch["position_ids"] == 0, starts)
    changes = np.diff(batch["document_ids"], axis=1) != 0
    assert np.array_equal(changes, starts[:, 1:])

    # Every whole conversation packed here trains on exactly its assistant turns.
    decoder = dataset_tokenizer(TokenizedDataset(data["folder"] / "tokens" / "chat"))
    whole = [p for p in pieces if p[3] == "chat" and p[5]]
    assert len(whole) > 10
    for row, column, length, _, doc_id, _ in whole:
        columns = slice(column, column + length)
        kept = tokens[row, columns][labels[row, columns] != IGNORE_INDEX]
        assert decoder.decode(kept) == trained_text(data["messages"][doc_id])
    # Conversations cut at a sequence's end keep the mask of the part they hold.
    assert any(p[3] == "chat" and not p[5] for p in pieces)


def test_megatron_labels_carry_the_mask_of_each_next_token(data):
    dataset = MixtureDataset(mixture(data["catalog"], True), boundaries="document_ids")
    positions = np.arange(ROWS)
    batch = dataset.read_positions(positions)
    masks, _, _ = expected_rows(dataset, positions, SEQ_LEN + 1)
    assert np.array_equal(batch["labels"][:, :-1], batch["input_ids"][:, 1:])
    assert batch["loss_mask"].dtype == np.float32
    assert np.array_equal(batch["loss_mask"], masks[:, 1:].astype(np.float32))
    assert 0 < batch["loss_mask"].mean() < 1
    # "megatron" names the same stream.
    same = MixtureDataset(mixture(data["catalog"], "megatron"))
    assert same.fingerprint == dataset.fingerprint
    with pytest.raises(ConfigError, match="labels must be false, true .* got 'hf'"):
        MixtureDataset(mixture(data["catalog"], "hf"))


def test_masked_data_without_labels_is_refused(data):
    with pytest.raises(ConfigError, match="chat@1: fine-tuning data whose loss masks only"):
        MixtureDataset(mixture(data["catalog"], False))


def test_a_packed_batch_gives_a_real_model_the_loss_of_its_documents_apart(data):
    """A tiny Llama (random weights, no download) on packed rows: the loss equals the loss
    of each document run alone, so the labels and position_ids separate documents."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    dataset = MixtureDataset(mixture(data["catalog"], "huggingface"), boundaries="position_ids")
    batch = dataset.read_positions(np.arange(8))
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=400,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=SEQ_LEN,
    )
    model = LlamaForCausalLM._from_config(config, attn_implementation="sdpa").eval()
    checked = 0
    for row in range(len(batch["input_ids"])):
        ids = torch.from_numpy(batch["input_ids"][row : row + 1])
        labels = torch.from_numpy(batch["labels"][row : row + 1])
        positions = torch.from_numpy(batch["position_ids"][row : row + 1])  # int32, as given
        starts = np.flatnonzero(batch["position_ids"][row] == 0).tolist() + [SEQ_LEN]
        if len(starts) < 3 or (labels[0, 1:] != IGNORE_INDEX).sum() == 0:
            continue
        with torch.no_grad():
            packed = model(input_ids=ids, labels=labels, position_ids=positions, use_cache=False)
            total, count = 0.0, 0
            for begin, end in zip(starts[:-1], starts[1:], strict=True):
                counted = int((labels[0, begin + 1 : end] != IGNORE_INDEX).sum())
                if counted:
                    alone = model(
                        input_ids=ids[:, begin:end], labels=labels[:, begin:end], use_cache=False
                    )
                    total += float(alone.loss) * counted
                    count += counted
            unpacked = model(input_ids=ids, labels=labels, use_cache=False)
        assert float(packed.loss) == pytest.approx(total / count, abs=1e-5)
        # Without position_ids the documents attend to each other and the loss moves.
        assert abs(float(unpacked.loss) - total / count) > 1e-5
        checked += 1
        if checked == 3:
            break
    assert checked == 3


def test_masks_from_object_storage_are_cached_and_checked(data, s3_server, tmp_path):
    bucket = create_bucket(s3_server, "sft-masks")
    tokenize_both(data["folder"], data["tokenizer"], f"s3://{bucket}/tokens", s3_server)
    catalog = Catalog(str(tmp_path / "catalog.duckdb"), storage_options=s3_server)
    for name in ("web", "chat"):
        catalog.register(f"s3://{bucket}/tokens/{name}", name=name)
    assert catalog.get("chat").masks and not catalog.get("web").masks
    fs = s3fs.S3FileSystem(**s3_server)
    remote = {"storage_options": s3_server, "cache_dir": str(tmp_path / "cache")}
    spec = mixture(catalog.path, "huggingface", **remote)
    local = MixtureDataset(mixture(data["catalog"], "huggingface"))
    positions = np.arange(60)
    expected = local.read_positions(positions)
    read = MixtureDataset(spec).read_positions(positions)
    for key in ("input_ids", "labels", "position_ids"):
        assert np.array_equal(read[key], expected[key]), key

    with pytest.raises(ConfigError, match="cache: ranges does not read; use cache: shards"):
        MixtureDataset(spec | {"cache": "ranges"})

    # A cache limit holds the masks too: one byte short of every shard and mask is refused.
    held = 0
    for name in ("web", "chat"):
        for shard in catalog.get(name).stems:
            for suffix in (".bin", ".mask") if name == "chat" else (".bin",):
                held += fs.size(f"{bucket}/tokens/{name}/{shard}{suffix}")
    small = spec | {"cache_dir": str(tmp_path / "small"), "cache_limit": held - 1}
    with pytest.raises(ConfigError, match=f"or raise cache_limit to at least {held:,} bytes"):
        MixtureDataset(small).read_positions(positions[:1])
    exact = spec | {"cache_dir": str(tmp_path / "exact"), "cache_limit": held}
    assert np.array_equal(MixtureDataset(exact).read_positions(positions)["labels"], read["labels"])

    stem = catalog.get("chat").stems[0]
    path = f"{bucket}/tokens/chat/{stem}.mask"
    original = fs.cat_file(path)
    fs.pipe_file(path, bytes([1 - original[0]]) + original[1:])
    changed = MixtureDataset(spec | {"cache_dir": str(tmp_path / "cold")})
    changed.source.retry.base_seconds = 0.01
    with pytest.raises(MixplaneError, match=rf"{stem}\.mask: the downloaded bytes hash to"):
        changed.read_positions(positions)


def test_the_readme_fine_tuning_snippet_runs_as_written(tmp_path, monkeypatch):
    write_tokenizer(tmp_path / "tokenizer")
    chats = write_chats(tmp_path / "chats" / "chats.jsonl", 1500, seed=3)
    write_texts(tmp_path / "web" / "web.jsonl", 3000, seed=4)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(readme_block("python", '"labels": "huggingface"'), namespace)
    batch, dataset = namespace["batch"], namespace["dataset"]
    assert namespace["catalog"].get("chat").masks
    assert batch["input_ids"].shape == batch["labels"].shape == (8, 2048)
    assert np.array_equal(batch["position_ids"][:, 0], np.zeros(8))
    chat_rows = batch["component"] == dataset.names.index("chat")
    assert chat_rows.any() and (~chat_rows).any()
    # In the conversations' rows, the prompts are left out; in the text's, every token
    # but each document's first is trained on.
    assert (batch["labels"][chat_rows] == IGNORE_INDEX).mean() > 0.2
    web = batch["labels"][~chat_rows]
    assert np.array_equal(web == IGNORE_INDEX, batch["position_ids"][~chat_rows] == 0)
    assert len(chats) == 1500


def test_dataloader_workers_carry_the_labels(data):
    """DataLoader workers (each a copy of the reader, masks reopened there) hand out the
    batches a single process reads."""
    from mixplane.load.torch import torch_loader

    spec = mixture(data["catalog"], "huggingface")
    expected = MixtureDataset(spec, boundaries="both").read_positions(np.arange(16))
    loader = torch_loader(MixtureDataset(spec, boundaries="both"), batch_size=4, num_workers=2)
    batches = []
    for batch in loader:
        batches.append(batch)
        if len(batches) == 4:
            break
    for key in ("input_ids", "labels", "position_ids", "document_ids"):
        joined = np.concatenate([batch[key].numpy() for batch in batches])
        assert np.array_equal(joined, expected[key]), key


def test_adaptive_feedback_counts_only_the_labels_trained_on(data):
    """With `labels: huggingface` the loss has a value per shifted position; positions
    whose label is -100 (prompts, document starts) are no tokens of a component's loss."""
    import torch

    from mixplane.load.adaptive.feedback import Feedback
    from mixplane.load.torch import torch_loader

    policy = {"name": "adaptive_policies:LossSquared", "update_every": 5, "delay": 1}
    spec = mixture(data["catalog"], "huggingface", global_batch_size=4, policy=policy)
    dataset = MixtureDataset(spec, read_ahead=64)
    loader = torch_loader(dataset, 4)
    feedback = Feedback(loader)
    expected_loss, expected_tokens = np.zeros(2), np.zeros(2)
    for step, batch in enumerate(loader):
        trained = batch["labels"][:, 1:] != IGNORE_INDEX
        # A loss of 100 where nothing is trained: counting one would show in the sums.
        loss = batch["component"].double()[:, None] + torch.where(trained, 0.5, 100.0)
        if step == 0:
            with pytest.raises(ConfigError, match=f"have {SEQ_LEN - 1} tokens with a target"):
                feedback.observe(step, torch.zeros(4, SEQ_LEN, dtype=torch.float64), batch)
        for component, row, kept in zip(batch["component"].tolist(), loss, trained, strict=True):
            expected_loss[component] += float(row[kept].sum())
            expected_tokens[component] += int(kept.sum())
        feedback.observe(step, loss, batch)
        if step == 4:
            break
    details = dataset.weight_log()[0]["details"]
    assert details["tokens"] == expected_tokens.tolist()
    np.testing.assert_allclose(details["loss"], expected_loss, rtol=1e-12)


def test_padded_batches_of_conversations_train_on_assistant_tokens_only(data):
    """`packing: none` with `labels: huggingface`: each row is one whole document, its
    labels -100 over padding, at its first token and where the mask says not to train."""
    spec = mixture(data["catalog"], "huggingface", packing="none", pad_id=0)
    spec |= {"seq_len": 4096, "bucketing": {"max_tokens_per_batch": 8192}}
    dataset = UnpackedDataset(spec)
    decoder = dataset_tokenizer(TokenizedDataset(data["folder"] / "tokens" / "chat"))
    chat, seen = dataset.names.index("chat"), 0
    for batch, _ in zip(dataset, range(6), strict=False):
        tokens, labels, attention = batch["input_ids"], batch["labels"], batch["attention_mask"]
        assert labels.shape == tokens.shape and labels.dtype == np.int64
        first = np.zeros(tokens.shape, dtype=bool)
        first[:, 0] = True
        # Pretraining text trains on every token of its document but the first.
        web = batch["component"] != chat
        assert np.array_equal((labels != IGNORE_INDEX)[web], ((attention == 1) & ~first)[web])
        assert np.all(labels[attention == 0] == IGNORE_INDEX)
        chats = np.flatnonzero(~web).tolist()
        for row, doc_id in zip(chats, row_ids(dataset, batch, ~web), strict=True):
            kept = tokens[row][labels[row] != IGNORE_INDEX]
            assert decoder.decode(kept) == trained_text(data["messages"][doc_id])
            seen += 1
    assert seen > 10


def row_ids(dataset: UnpackedDataset, batch: dict, rows: np.ndarray) -> list[str]:
    """The ids of the documents in a padded batch's `rows`, from their stream positions."""
    located = locate(dataset.stream, dataset.resolved, batch["index"][rows])
    ids = []
    for c, document in zip(located.components.tolist(), located.documents.tolist(), strict=True):
        shard, index = dataset.resolved.ranges[c].locate(np.array([document]))
        ids.append(str(dataset.source.files.metadata_column(int(shard[0]), "id")[int(index[0])]))
    return ids
