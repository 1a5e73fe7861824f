from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mixplane.errors import InputError
from mixplane.io.urls import expand_braces, expand_inputs, open_url


def test_brace_ranges_keep_zero_padding():
    assert expand_braces("shard-{000..003}.jsonl.zst") == [
        "shard-000.jsonl.zst",
        "shard-001.jsonl.zst",
        "shard-002.jsonl.zst",
        "shard-003.jsonl.zst",
    ]
    assert expand_braces("x{3..1}") == ["x3", "x2", "x1"]


def test_brace_alternatives_nest_and_multiply():
    assert expand_braces("{a,b{1,2}}/{x,y}") == ["a/x", "a/y", "b1/x", "b1/y", "b2/x", "b2/y"]


@given(st.integers(0, 500), st.integers(0, 500), st.integers(1, 5))
def test_brace_range_counts(lo, hi, width):
    pattern = f"f{{{str(lo).zfill(width)}..{str(hi).zfill(width)}}}"
    expanded = expand_braces(pattern)
    assert len(expanded) == abs(hi - lo) + 1
    assert expanded[0] == "f" + (str(lo).zfill(width) if width > 1 else str(lo))


def test_unbalanced_brace_is_a_clear_error():
    with pytest.raises(InputError, match="unbalanced"):
        expand_braces("a{b")


def test_globs_and_folders_expand_sorted(tmp_path: Path):
    for name in ("b.jsonl", "a.jsonl", "sub/c.jsonl", "_hidden.json", ".dot", "_tasks/t.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}\n")
    urls = [url for url, _ in expand_inputs(str(tmp_path / "*.jsonl"))]
    assert [Path(u).name for u in urls] == ["a.jsonl", "b.jsonl"]
    folder = [Path(u).name for u, _ in expand_inputs(str(tmp_path))]
    assert folder == ["a.jsonl", "b.jsonl", "c.jsonl"]


def test_missing_input_names_the_pattern(tmp_path: Path):
    with pytest.raises(InputError, match="nothing.jsonl"):
        expand_inputs(str(tmp_path / "nothing.jsonl"))


@pytest.mark.parametrize("suffix", ["", ".gz", ".zst"])
def test_compression_round_trip(tmp_path: Path, suffix: str):
    url = str(tmp_path / f"data.txt{suffix}")
    payload = b"line\n" * 10_000
    with open_url(url, "wb") as out:
        out.write(payload)
    with open_url(url) as stream:
        assert stream.read() == payload
    if suffix:
        assert Path(url).stat().st_size < len(payload) / 10
