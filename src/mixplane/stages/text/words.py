"""Fast word splitting that agrees with spaCy's rule-based English tokenizer.

The text is cut at whitespace into chunks; each chunk is split by the same kind of rules a
rule-based tokenizer uses: punctuation peeled off the front ("prefixes") and the back
("suffixes") one piece at a time, special cases ("don't", "Dr."), web addresses kept whole,
and "infixes" split inside the remainder (hyphens between letters, "...", "a/b").
Chunks repeat a lot in real text, so each chunk's split is cached: the common case is one
dictionary lookup per chunk.

Example:
    >>> split_words("Don't stop-believing... (e.g. at 5pm)!")
    ['Do', "n't", 'stop', '-', 'believing', '...', '(', 'e.g.', 'at', '5', 'pm', ')', '!']
"""

from __future__ import annotations

import re
from itertools import chain

from mixplane.stages.text.chars import ALPHA, ALPHA_LOWER, ALPHA_UPPER, SYMBOLS
from mixplane.stages.text.special_cases import SPECIAL_CASES

_PUNCT = "…,:;!?¿؟¡()[]{}<>_#*&。？！，、；：～·।،۔؛٪"
_QUOTES = "'\"”“`‘´’‚,„»«「」『』（）〔〕【】《》〈〉〈〉⟦⟧"
_CURRENCY_CHARS = "$£€¥฿₽﷼₴₠₡₢₣₤₥₦₧₨₩₪₫₭₮₯₰₱₲₳₵₶₷₸₹₺₻₼₾₿"
_CURRENCY = r"US\$|C\$|A\$|[" + re.escape(_CURRENCY_CHARS) + "]"
_UNITS = (
    "km km² km³ m m² m³ dm dm² dm³ cm cm² cm³ mm mm² mm³ ha µm nm yd in ft kg g mg µg t lb oz "
    "m/s km/h kmh mph hPa Pa mbar mb MB kb KB gb GB tb TB T G M K % км км² км³ м м² м³ дм дм² "
    "дм³ см см² см³ мм мм² мм³ нм кг г мг м/с км/ч кПа Па мбар Кб КБ кб Мб МБ мб Гб ГБ гб Тб ТБ тб"
)
_UNIT = "|".join(re.escape(unit) for unit in _UNITS.split())
_HYPHENS = "---|--|——|-|–|—|~"
_SINGLE = re.escape(_PUNCT + _QUOTES)

# One piece at the start of a chunk.
_PREFIX = re.compile(
    rf"[§%=—–{_SINGLE}{SYMBOLS}]|\+(?![0-9])|\.\.+|{_CURRENCY}",
)
# One piece at the end of a chunk; the leftmost position that completes a match wins.
_AFTER_PERIOD = rf"0-9{ALPHA_LOWER}%²\-+|{re.escape(_PUNCT)}(?:{re.escape(_QUOTES)})"
_SUFFIX = re.compile(
    rf"(?:[{_SINGLE}{SYMBOLS}—–]|\.\.+|['’][sS]"
    rf"|(?<=[0-9])\+|(?<=°[FfCcKk])\.|(?<=[0-9])(?:{_CURRENCY})|(?<=[0-9])(?:{_UNIT})"
    rf"|(?<=[{_AFTER_PERIOD}])\.|(?<=[{ALPHA_UPPER}][{ALPHA_UPPER}])\.)$"
)
_QUOTE_CLASS = re.escape(_QUOTES)
_INFIX = re.compile(
    rf"\.\.+|…|[{SYMBOLS}]|(?<=[0-9])[+\-*^](?=[0-9-])"
    rf"|(?<=[{ALPHA_LOWER}{_QUOTE_CLASS}])\.(?=[{ALPHA_UPPER}{_QUOTE_CLASS}])"
    rf"|(?<=[{ALPHA}]),(?=[{ALPHA}])|(?<=[{ALPHA}0-9])(?:{_HYPHENS})(?=[{ALPHA}])"
    rf"|(?<=[{ALPHA}0-9])[:<>=/](?=[{ALPHA}])"
)
_HOST = r"[A-Za-z0-9\u00a1-\uffff]"
_URL = re.compile(
    r"(?:[\w+\-.]{2,}://)?(?:\S+(?::\S*)?@)?"
    # Private and loopback addresses are not treated as web addresses.
    r"(?:(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})"
    r"(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})"
    r"(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}"
    r"\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4])"
    rf"|(?:(?:{_HOST}[A-Za-z0-9\u00a1-\uffff_-]{{0,62}})?{_HOST}\.)+[{ALPHA_LOWER}]{{2,63}})"
    r"(?::\d{2,5})?(?:[/?#]\S*)?"
)

_CACHE_LIMIT = 200_000
_cache: dict[str, tuple[str, ...]] = {}


def split_words(text: str) -> list[str]:
    """Split `text` into word and punctuation tokens (whitespace dropped).

    Example:
        >>> split_words("U.S. prices rose 5%.")
        ['U.S.', 'prices', 'rose', '5', '%', '.']
    """
    chunks = text.split()
    get = _cache.get
    pieces = list(map(get, chunks))
    if None in pieces:
        for index, piece in enumerate(pieces):
            if piece is None:
                pieces[index] = split_chunk(chunks[index])
    return list(chain.from_iterable(pieces))


def split_chunk(chunk: str) -> tuple[str, ...]:
    """Split one whitespace-free chunk, remembering the answer.

    Example:
        >>> split_chunk("(well-known).")
        ('(', 'well', '-', 'known', ')', '.')
    """
    tokens = _cache.get(chunk)
    if tokens is None:
        tokens = tuple(_split_uncached(chunk, SPECIAL_CASES))
        if len(tokens) > 1 and _PHRASE_STARTS.intersection(tokens):
            tokens = _merge_phrases(tokens)
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[chunk] = tokens
    return tokens


def _split_uncached(chunk: str, specials: dict[str, tuple[str, ...]]) -> list[str]:
    prefixes: list[str] = []
    suffixes: list[str] = []
    rest = chunk
    last_size = -1
    while rest and len(rest) != last_size:
        if rest in specials:
            break
        last_size = len(rest)
        prefix = _PREFIX.match(rest)
        pre_len = prefix.end() if prefix else 0
        if pre_len and rest[pre_len:] in specials:
            prefixes.append(rest[:pre_len])
            rest = rest[pre_len:]
            break
        suffix = _SUFFIX.search(rest, pre_len)
        suf_len = len(rest) - suffix.start() if suffix else 0
        if suf_len and suf_len < len(rest) and rest[:-suf_len] in specials:
            suffixes.append(rest[-suf_len:])
            rest = rest[:-suf_len]
            break
        if pre_len and suf_len and pre_len + suf_len <= len(rest):
            prefixes.append(rest[:pre_len])
            suffixes.append(rest[-suf_len:])
            rest = rest[pre_len:-suf_len]
        elif pre_len:
            prefixes.append(rest[:pre_len])
            rest = rest[pre_len:]
        elif suf_len:
            suffixes.append(rest[-suf_len:])
            rest = rest[:-suf_len]
    return prefixes + _split_middle(rest, specials) + suffixes[::-1]


def _split_middle(rest: str, specials: dict[str, tuple[str, ...]]) -> list[str]:
    if not rest:
        return []
    special = specials.get(rest)
    if special is not None:
        return list(special)
    if _URL.fullmatch(rest):
        return [rest]
    tokens = []
    start = 0
    for match in _INFIX.finditer(rest):
        infix_start, infix_end = match.span()
        if infix_start == 0:
            continue
        if infix_start != start:
            tokens.append(rest[start:infix_start])
        if infix_start != infix_end:
            tokens.append(rest[infix_start:infix_end])
        start = infix_end
    if start < len(rest):
        tokens.append(rest[start:])
    return tokens


# Special cases that the affix rules cut into pieces (":')" -> ":", "'", ")") are put back
# together when their pieces appear side by side in a chunk.
_PHRASES: dict[tuple[str, ...], str] = {}
for _key in SPECIAL_CASES:
    _pieces = tuple(_split_uncached(_key, {}))
    if len(_pieces) > 1:
        _PHRASES[_pieces] = _key
_PHRASE_STARTS = frozenset(pieces[0] for pieces in _PHRASES)
_PHRASE_LENGTHS = sorted({len(pieces) for pieces in _PHRASES}, reverse=True)


def _merge_phrases(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """Replace runs of tokens that spell a special case, longest runs first."""
    taken = [False] * len(tokens)
    found: dict[int, tuple[int, str]] = {}
    for length in _PHRASE_LENGTHS:
        for start in range(len(tokens) - length + 1):
            key = _PHRASES.get(tokens[start : start + length])
            if key is not None and not taken[start] and not taken[start + length - 1]:
                found[start] = (length, key)
                for index in range(start, start + length):
                    taken[index] = True
    if not found:
        return tokens
    merged: list[str] = []
    index = 0
    while index < len(tokens):
        if index in found:
            length, key = found[index]
            merged.extend(SPECIAL_CASES[key])
            index += length
        else:
            merged.append(tokens[index])
            index += 1
    return tuple(merged)
