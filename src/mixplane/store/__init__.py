"""Token shards: the format, the writer, the memory-mapped reader and exports.

Example:
    >>> from mixplane.store import ShardReader, TokenizedDataset
    >>> dataset = TokenizedDataset("tokens/")  # doctest: +SKIP
    >>> dataset.shard(0).document(3)  # doctest: +SKIP
"""

from mixplane.store.dataset import TokenizedDataset
from mixplane.store.format import FORMAT_NAME, FORMAT_VERSION, token_dtype
from mixplane.store.megatron import export_megatron
from mixplane.store.reader import ShardReader
from mixplane.store.writer import ShardRecord, TaskShardWriter

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ShardReader",
    "ShardRecord",
    "TaskShardWriter",
    "TokenizedDataset",
    "export_megatron",
    "token_dtype",
]
