"""Conversations to tokens and a loss mask: render with a chat template, find each turn.

A conversation is rendered with a Jinja chat template, the same way Hugging Face's
`apply_chat_template` does (sandboxed Jinja, `trim_blocks`, `lstrip_blocks`, `messages`,
`add_generation_prompt`, `bos_token`, `eos_token`, `raise_exception`), and the text is
tokenized with special tokens recognised. Which tokens belong to which turn is found by
rendering the conversation up to the end of each message and tokenizing that prefix: the
prefix's tokens must begin the whole conversation's tokens (checked; otherwise the turn
boundaries would be guesses), and the tokens between two prefixes are the turn's. Before a
turn of the assistant the prefix is rendered with the generation prompt, so the header
(`<|im_start|>assistant`) counts as the prompt's and is not trained on.

Example:
    >>> chat = ChatConfig(template="{% for m in messages %}{{ m.role }}: {{ m.content }}\\n"
    ...                   "{% endfor %}")
    >>> template = ChatTemplate(chat.template, None, None)
    >>> template.texts([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    ['user: hi\\nassistant: yo\\n', 'user: hi\\n']
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mixplane.errors import ConfigError, MixplaneError
from mixplane.io.urls import url_filesystem

# The roles a conversation may hold unless the config names others.
DEFAULT_ROLES = ("system", "user", "assistant", "tool")
ASSISTANT = "assistant"


class ChatConfig(BaseModel):
    """How to read conversations and which turns to train on.

    Records hold a list of messages (`messages_key`, each with `role_key` and
    `content_key`), or a prompt and a response (`prompt_key`, `response_key`: a user turn,
    then an assistant turn). `train_on`: the roles whose tokens the loss is taken on
    (default: the assistant's), or `all`.

    Example:
        >>> sorted(ChatConfig(train_on=["assistant", "tool"]).trained_roles)
        ['assistant', 'tool']
    """

    model_config = ConfigDict(extra="forbid")

    messages_key: str = Field("messages", description="field holding the list of messages")
    role_key: str = Field("role", description="field of a message holding its role")
    content_key: str = Field("content", description="field of a message holding its text")
    prompt_key: str | None = Field(
        None, description="instead of messages: field holding a prompt (a user turn)"
    )
    response_key: str | None = Field(
        None, description="with prompt_key: field holding the response (an assistant turn)"
    )
    template: str | None = Field(
        None,
        description="a Jinja chat template; default: the tokenizer's own (chat_template in "
        "the tokenizer folder's tokenizer_config.json, or its chat_template.jinja)",
    )
    roles: list[str] = Field(list(DEFAULT_ROLES), min_length=1, description="roles allowed")
    train_on: list[str] | Literal["all"] = Field(
        [ASSISTANT], description="roles whose tokens are trained on, or all"
    )

    @model_validator(mode="after")
    def _consistent(self) -> ChatConfig:
        if (self.prompt_key is None) != (self.response_key is None):
            raise ValueError("set both prompt_key and response_key, or neither")
        if self.train_on != "all":
            unknown = [role for role in self.train_on if role not in self.roles]
            if unknown:
                raise ValueError(
                    f"train_on names roles that are not allowed: {', '.join(unknown)} "
                    f"(roles: {', '.join(self.roles)})"
                )
            if not self.train_on:
                raise ValueError("train_on names no role: nothing would be trained on")
        return self

    @property
    def trained_roles(self) -> frozenset[str]:
        return frozenset(self.roles if self.train_on == "all" else self.train_on)

    @property
    def field_names(self) -> tuple[str, ...]:
        """The record fields holding the conversation (not kept as metadata)."""
        if self.prompt_key is not None:
            return (self.prompt_key, self.response_key or "")
        return (self.messages_key,)

    def messages(self, record: dict[str, Any]) -> list[dict[str, Any]] | str:
        """The record's messages as `{"role", "content", ...}` dicts, or why they are bad."""
        if self.prompt_key is not None:
            return self._pair(record)
        if self.messages_key not in record:
            return f"record has no field {self.messages_key!r}: its fields are {_fields(record)}"
        raw = record[self.messages_key]
        if isinstance(raw, np.ndarray):  # a Parquet list column read to Python
            raw = raw.tolist()
        if not isinstance(raw, list):
            return f"field {self.messages_key!r} is {type(raw).__name__}, expected a list"
        if not raw:
            return f"field {self.messages_key!r} is an empty list: no message"
        messages = []
        for number, message in enumerate(raw):
            if not isinstance(message, dict):
                return f"message {number} is {type(message).__name__}, expected an object"
            role, content = message.get(self.role_key), message.get(self.content_key)
            if not isinstance(role, str):
                return f"message {number} has no {self.role_key!r} text"
            if role not in self.roles:
                return (
                    f"message {number} has role {role!r}, not one of {', '.join(self.roles)} "
                    "(set chat.roles to allow it)"
                )
            if not isinstance(content, str):
                return f"message {number} has no {self.content_key!r} text"
            rest = {k: v for k, v in message.items() if k not in (self.role_key, self.content_key)}
            messages.append({**rest, "role": role, "content": content})
        if not any(m["role"] in self.trained_roles for m in messages):
            trained = ", ".join(sorted(self.trained_roles))
            return f"no message of a trained role ({trained}): nothing to train on"
        return messages

    def _pair(self, record: dict[str, Any]) -> list[dict[str, Any]] | str:
        texts = []
        for key in (self.prompt_key, self.response_key):
            value = record.get(key)  # type: ignore[arg-type]
            if not isinstance(value, str):
                found = "missing" if value is None else type(value).__name__
                return f"field {key!r} is {found}, expected text"
            texts.append(value)
        return [{"role": "user", "content": texts[0]}, {"role": ASSISTANT, "content": texts[1]}]


@dataclass(frozen=True)
class ChatTemplate:
    """A compiled chat template and the special tokens' text it is given."""

    source: str
    bos_token: str | None
    eos_token: str | None

    def __getstate__(self) -> dict[str, Any]:
        # Sent to worker processes without its compiled form (they compile it again).
        return {k: v for k, v in self.__dict__.items() if k != "_compiled"}

    def compile(self) -> None:
        """Compile the template now: raise `ConfigError` if it is not valid Jinja."""
        _ = self._compiled

    @cached_property
    def _compiled(self) -> Any:
        from jinja2 import TemplateError
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        environment = ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
        )
        environment.filters["tojson"] = _tojson
        environment.globals["raise_exception"] = _raise
        try:
            return environment.from_string(self.source)
        except TemplateError as error:
            raise ConfigError(f"chat template: {error}") from None

    @property
    def fingerprint(self) -> str:
        content = json.dumps([self.source, self.bos_token, self.eos_token]).encode()
        return hashlib.sha256(content).hexdigest()

    def render(self, messages: Sequence[dict[str, Any]], generation_prompt: bool) -> str:
        return self._compiled.render(
            messages=list(messages),
            add_generation_prompt=generation_prompt,
            bos_token=self.bos_token or "",
            eos_token=self.eos_token or "",
        )

    def texts(self, messages: Sequence[dict[str, Any]]) -> list[str]:
        """The whole conversation's text, then the text up to the end of each message but
        the last (with the generation prompt when an assistant turn follows)."""
        whole = [self.render(messages, False)]
        return whole + [
            self.render(messages[:k], messages[k]["role"] == ASSISTANT)
            for k in range(1, len(messages))
        ]


def turn_mask(
    roles: Sequence[str],
    texts: Sequence[str],
    ids: Sequence[Sequence[int]],
    trained: frozenset[str],
    where: str,
) -> np.ndarray:
    """The loss mask of a conversation's tokens (`ids[0]`), from the tokens of its prefixes
    (`ids[1:]`, as `ChatTemplate.texts` gives them): 1 on the tokens of trained roles' turns.

    The first token is never trained on: nothing in the document comes before it. Raises
    `MixplaneError` naming `where` when a prefix's text or tokens do not begin the whole
    conversation's (the turns cannot then be told apart).

    Example:
        >>> turn_mask(["user", "assistant"], ["ab", "a"], [[1, 2, 3], [1]], {"assistant"}, "x")
        array([0, 1, 1], dtype=uint8)
    """
    whole = list(ids[0])
    bounds = [0]
    for k, (text, prefix) in enumerate(zip(texts[1:], ids[1:], strict=True), start=1):
        if not texts[0].startswith(text):
            raise MixplaneError(
                f"{where}: the chat template renders the first {k} messages as text that does "
                "not begin the whole conversation's, so the turns cannot be told apart; use a "
                "template whose output only grows as messages are added"
            )
        if list(prefix) != whole[: len(prefix)] or len(prefix) < bounds[-1]:
            raise MixplaneError(
                f"{where}: the tokens of the first {k} messages do not begin the tokens of the "
                f"whole conversation (the tokenizer merges across the end of message {k - 1}), "
                "so the turns' tokens cannot be told apart; change the template so each turn "
                "ends with a special token or a newline"
            )
        bounds.append(len(prefix))
    bounds.append(len(whole))
    mask = np.zeros(len(whole), dtype=np.uint8)
    for role, start, stop in zip(roles, bounds[:-1], bounds[1:], strict=True):
        if role in trained:
            mask[start:stop] = 1
    if len(mask):
        mask[0] = 0
    return mask


def find_chat_template(
    chat: ChatConfig, tokenizer_spec: str, storage_options: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The template to use (the config's, else the tokenizer folder's) and the tokenizer
    folder's `tokenizer_config.json` (empty when there is none)."""
    folder = _tokenizer_folder(tokenizer_spec, storage_options)
    settings: dict[str, Any] = {}
    found = None
    if folder is not None:
        fs, path = url_filesystem(folder, storage_options)
        config_path = posixpath.join(path, "tokenizer_config.json")
        if fs.exists(config_path):
            with fs.open(config_path, "rb") as handle:
                settings = json.loads(handle.read())
        jinja_path = posixpath.join(path, "chat_template.jinja")
        if fs.exists(jinja_path):
            with fs.open(jinja_path, "rb") as handle:
                found = handle.read().decode("utf-8")
        found = found or _named_template(settings.get("chat_template"))
    template = chat.template or found
    if not template:
        raise ConfigError(
            f"tokenizer {tokenizer_spec!r} has no chat template (no chat_template.jinja nor "
            "chat_template in a tokenizer_config.json beside it); give one as chat.template"
        )
    return template, settings


def special_text(settings: dict[str, Any], key: str) -> str | None:
    """A special token's text from `tokenizer_config.json` (a string or `{"content": ...}`)."""
    value = settings.get(key)
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _named_template(value: Any) -> str | None:
    """`chat_template` as a string, or the one named `default` in a list of named ones."""
    if isinstance(value, list):
        named = {item.get("name"): item.get("template") for item in value if isinstance(item, dict)}
        value = named.get("default")
    return value if isinstance(value, str) else None


def _tokenizer_folder(spec: str, storage_options: dict[str, Any]) -> str | None:
    if spec.startswith(("tiktoken:", "hf:")):
        return None
    fs, path = url_filesystem(spec, storage_options)
    if fs.isdir(path):
        return spec
    if fs.exists(path):
        return spec.rsplit("/", 1)[0] if "/" in spec else os.curdir
    return None


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, **options) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, **options)


def _raise(message: str) -> None:
    from jinja2 import TemplateError

    raise TemplateError(message)


def _fields(record: dict[str, Any]) -> str:
    names = [str(name) for name in record]
    return ", ".join(names[:12]) + (" ..." if len(names) > 12 else "") or "none"


@dataclass
class EncodedChats:
    """A batch of conversations encoded: each kept one's ids and mask, which rows of the
    batch were kept, and the rows the template refused (row, error)."""

    ids: list[list[int]]
    masks: list[np.ndarray]
    kept: list[int]
    refused: list[tuple[int, str]]


def encode_conversations(
    conversations: Sequence[Sequence[dict[str, Any]]],
    locations: Sequence[str],
    template: ChatTemplate,
    tokenizer: Any,
    trained: frozenset[str],
) -> EncodedChats:
    """Render, tokenize (one batch call for every text) and mask a batch of conversations.

    A conversation the template refuses (its `raise_exception`, or an error rendering it)
    or that leaves no token to train on is refused with the reason, for the quarantine.
    """
    from jinja2 import TemplateError

    texts: list[str] = []
    spans: list[tuple[int, int, int]] = []  # row, first text, text count
    refused: list[tuple[int, str]] = []
    for row, messages in enumerate(conversations):
        try:
            rendered = template.texts(messages)
        except TemplateError as error:
            refused.append((row, f"chat template: {error}"))
            continue
        spans.append((row, len(texts), len(rendered)))
        texts.extend(rendered)
    encoded = tokenizer.encode_markup(texts) if texts else []
    out = EncodedChats([], [], [], refused)
    for row, first, count in spans:
        roles = [message["role"] for message in conversations[row]]
        mask = turn_mask(
            roles, texts[first : first + count], encoded[first : first + count], trained,
            locations[row],
        )  # fmt: skip
        if not mask.any():
            out.refused.append((row, "no token to train on: the trained turns render empty"))
            continue
        out.ids.append(encoded[first])
        out.masks.append(mask)
        out.kept.append(row)
    out.refused.sort()
    return out


def pack_masks(masks: Sequence[np.ndarray], bos: bool, eos: bool) -> np.ndarray:
    """The masks of packed documents (as `task.pack` lays out their tokens): a BOS is not
    trained on, an EOS is when the conversation's last token is.

    Example:
        >>> pack_masks([np.array([0, 1], np.uint8)], bos=True, eos=True).tolist()
        [0, 0, 1, 1]
    """
    parts = []
    for mask in masks:
        if bos:
            parts.append(np.zeros(1, np.uint8))
        parts.append(mask)
        if eos:
            parts.append(mask[-1:] if len(mask) else np.zeros(1, np.uint8))
    return np.concatenate(parts) if parts else np.zeros(0, np.uint8)
