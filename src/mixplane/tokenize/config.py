"""The tokenize configuration: one model shared by the CLI and the Python API."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator

from mixplane.configs import validate_config
from mixplane.process.config import InputConfig
from mixplane.tokenize.chat import ChatConfig

# Options that change how fast the work runs or where, never what it writes. The tokenizer
# counts by its fingerprint (its content), not by where it was read from.
_NOT_DECISIVE = {
    "output", "tokenizer", "workers", "executor", "ray_address", "storage_options", "batch_size"
}  # fmt: skip


class TokenizeConfig(BaseModel):
    """What to tokenize, with which tokenizer, into shards of which size, how parallel.

    Example:
        >>> config = TokenizeConfig.parse(
        ...     {"input": "clean/", "output": "tokens/", "tokenizer": "tokenizer.json"}
        ... )
        >>> config.shard_size_mb
        256.0
    """

    model_config = ConfigDict(extra="forbid")

    input: list[InputConfig]
    output: str = Field(description="output folder URL for the token shards")
    tokenizer: str = Field(description="tokenizer.json, .model, tiktoken:NAME or a hub name")
    bos: bool = Field(False, description="add the BOS token before every document")
    eos: bool = Field(False, description="add the EOS token after every document")
    bos_token: str | None = Field(None, description="the BOS token's text (default: detected)")
    eos_token: str | None = Field(None, description="the EOS token's text (default: detected)")
    batch_size: int = Field(1000, ge=1, description="documents per encode_batch call")
    shard_size_mb: float = Field(256.0, gt=0, description="target size of each shard's .bin")
    group_by: str | None = Field(
        None,
        description="property whose value each shard holds one of (e.g. language), so a "
        "mixture selecting by it reads whole shards",
    )
    chat: ChatConfig | None = Field(
        None,
        description="the inputs are conversations: render them with a chat template and "
        "store a loss mask beside the tokens (format version 2)",
    )
    workers: int = Field(1, ge=1, description="parallel tasks (one per input file)")
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None
    storage_options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("input", mode="before")
    @classmethod
    def _inputs(cls, value: Any) -> Any:
        items = value if isinstance(value, list) else [value]
        return [{"path": item} if isinstance(item, str) else item for item in items]

    @property
    def shard_bytes(self) -> int:
        return max(1, int(self.shard_size_mb * (1 << 20)))

    @property
    def adds_bos(self) -> bool:
        return self.bos or self.bos_token is not None

    @property
    def adds_eos(self) -> bool:
        return self.eos or self.eos_token is not None

    def outputs_hash(self, tokenizer_fingerprint: str) -> str:
        """Hash of everything that decides the shards' bytes, the tokenizer's content too."""
        decisive = self.model_dump(mode="json", exclude=_NOT_DECISIVE)
        decisive["tokenizer_fingerprint"] = tokenizer_fingerprint
        for option in ("group_by", "chat"):
            if decisive[option] is None:
                del decisive[option]  # runs from before the option keep their hash
        return hashlib.sha256(orjson.dumps(decisive, option=orjson.OPT_SORT_KEYS)).hexdigest()

    @classmethod
    def parse(cls, data: dict[str, Any], where: str = "tokenize options") -> TokenizeConfig:
        """Validate a dict, turning pydantic's report into one readable line."""
        return validate_config(cls, data, where)
