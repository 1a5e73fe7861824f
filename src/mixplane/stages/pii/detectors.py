"""Finding personal data in text: e-mail addresses, phone numbers, IP addresses, card numbers.

Each detector is a precompiled pattern that proposes candidates and a check that rejects
look-alikes: file names like `icon@2x.png`, private and reserved IP ranges, version numbers,
dates, ISBNs, and digit runs that fail the Luhn check. A phone number needs a "+" country
code, brackets or separators: bare digit strings are too often ids, amounts or timestamps.
`find_pii` runs the detectors whose trigger occurs in the text and resolves overlaps
(earlier kinds win). Boundaries are ASCII, so an address written right after Chinese or
Arabic words is still found.

Example:
    >>> spans = find_pii("Mail jo@example.org or call +44 20 7946 0958")
    >>> [(span.kind, span.text) for span in spans]
    [('email', 'jo@example.org'), ('phone', '+44 20 7946 0958')]
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass

KINDS = ("email", "credit_card", "ip_address", "phone")


@dataclass(frozen=True, slots=True)
class Span:
    """One finding: its kind and where it is."""

    kind: str
    start: int
    end: int
    text: str


# --- e-mail -----------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9_.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9_-])"
)
# Image and code file suffixes: "logo@2x.png" is a file, not an address.
_FILE_SUFFIXES_TEXT = (
    "png jpg jpeg gif svg webp ico bmp tif tiff avif css js mjs ts jsx tsx json map html "
    "htm xml pdf zip gz txt md py rb go rs java c h cpp php "
)
_FILE_SUFFIXES = frozenset(_FILE_SUFFIXES_TEXT.split())


def _emails(text: str) -> Iterator[Span]:
    # Only texts with an "@" get here; the lookbehind lets a match start only at the
    # beginning of a word, so the scan stays linear even on long runs of letters.
    for match in _EMAIL.finditer(text):
        address = match.group()
        local = address.partition("@")[0]
        suffix = address.rpartition(".")[2].lower()
        if not local.endswith(".") and ".." not in local and suffix not in _FILE_SUFFIXES:
            yield Span("email", match.start(), match.end(), address)


# --- where digit kinds can be ------------------------------------------------------------

# Card numbers, IPv4 addresses and phone numbers lie inside runs of digits, separators and
# brackets. The precise patterns run only on such runs (plus two characters, so that their
# lookaheads see what follows), which keeps long texts with few numbers cheap.
_NUMBER_RUN = re.compile(r"[+(0-9][0-9 ().+/-]{5,}")


def _number_runs(text: str) -> list[tuple[int, int]]:
    size = len(text)
    return [(run.start(), min(run.end() + 2, size)) for run in _NUMBER_RUN.finditer(text)]


# --- card numbers ---------------------------------------------------------------------------

_CARD = re.compile(r"(?<![A-Za-z0-9_.+-])[0-9](?:[ -]?[0-9]){12,18}(?![A-Za-z0-9_]|[.,-][0-9])")
_SEPARATORS = re.compile(r"[ -]")


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum every payment card number satisfies.

    Example:
        >>> luhn_valid("4111111111111111"), luhn_valid("4111111111111112")
        (True, False)
    """
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _cards(text: str, runs: list[tuple[int, int]]) -> Iterator[Span]:
    for start, end in runs:
        if end - start < 13:
            continue
        for match in _CARD.finditer(text, start, end):
            candidate = match.group()
            groups = _SEPARATORS.split(candidate)
            digits = "".join(groups)
            # Card networks use leading digits 2-6; groups as printed have at least 3 digits
            # (4-4-4-4, 4-6-5...), unlike tables of small numbers.
            if digits[0] not in "23456" or (len(groups) > 1 and min(map(len, groups)) < 3):
                continue
            if luhn_valid(digits) and not _after_isbn(text, match.start()):
                yield Span("credit_card", match.start(), match.end(), candidate)


# --- IP addresses ---------------------------------------------------------------------------

_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# Not inside a longer dotted number, nor the IPv4 tail of an IPv6 address ("::ffff:1.2.3.4").
_IPV4 = re.compile(
    rf"(?<![A-Za-z0-9_.-])(?<![0-9A-Fa-f]:){_OCTET}(?:\.{_OCTET}){{3}}(?![A-Za-z0-9_-]|\.[0-9])"
)
# Candidates only: ipaddress validates. Text gets this far only with two colons close
# together; the lookahead skips words made of the letters a-f at once.
_IPV6_HINT = re.compile(r":[0-9A-Fa-f]{0,4}:")
_IPV6 = re.compile(
    r"(?<![A-Za-z0-9_:.])(?=[0-9A-Fa-f]{0,4}:)[0-9A-Fa-f:]{2,39}"
    r"(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3})?(?![A-Za-z0-9_:]|\.[0-9])"
)


def _public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return address.is_global and not (address.is_multicast or address.is_reserved)


def _ipv4_addresses(
    text: str, runs: list[tuple[int, int]], include_private: bool
) -> Iterator[Span]:
    for start, end in runs:
        if text.find(".", start, end) == -1:
            continue
        for match in _IPV4.finditer(text, start, end):
            try:
                address = ipaddress.IPv4Address(match.group())
            except ValueError:
                continue
            if include_private or _public(address):
                yield Span("ip_address", match.start(), match.end(), match.group())


def _ipv6_addresses(text: str, include_private: bool) -> Iterator[Span]:
    for match in _IPV6.finditer(text):
        candidate = match.group()
        if candidate.count(":") < 2:
            continue
        try:
            address = ipaddress.IPv6Address(candidate)
        except ValueError:
            continue
        if include_private or (_public(address) and address.ipv4_mapped is None):
            yield Span("ip_address", match.start(), match.end(), candidate)


# --- phone numbers --------------------------------------------------------------------------

_PHONE = re.compile(
    # not glued to a word or number, nor the tail of a number in groups ("8 045 311 447")
    r"(?<![A-Za-z0-9_.+/-])(?<![0-9][ .,])(?:"
    # international: +country code, then groups; "+44 (0)20 ..." keeps the trunk zero
    r"(?P<intl>\+[1-9][0-9]{0,2}(?:[ .-]?\(0\))?(?:[ .-]?\(?[0-9]{1,5}\)?)"
    r"(?:[ .-]?[0-9]{1,5}){1,5})"
    # North American: (555) 123-4567, 555-123-4567, 1-800-555-0199
    r"|(?P<nanp>(?:1[ .-])?(?:\([2-9][0-9]{2}\)[ ]?[0-9]{3}[ .-][0-9]{4}"
    r"|[2-9][0-9]{2}(?P<ns>[ .-])[0-9]{3}(?P=ns)[0-9]{4}))"
    # national with a trunk zero: 020 7946 0958, 030/12345678, 03-1234-5678, (0171) 1234567
    r"|(?P<trunk>(?:\(0[0-9]{1,4}\)[ ]?|0[0-9]{1,4}[ /.-])"
    r"[0-9]{2,8}(?:(?P<tg>[ .-])[0-9]{2,8}(?:(?P=tg)[0-9]{2,8}){0,2})?)"
    # Chinese mobile numbers: 138 0013 8000
    r"|(?P<cn>1[3-9][0-9](?P<cs>[ -])[0-9]{4}(?P=cs)[0-9]{4})"
    r")(?![A-Za-z0-9_]|[.,/-][0-9])"
)
_DIGIT = re.compile(r"[0-9]")
_ISBN = re.compile(r"ISBN(?:-1[03])?:?\s*$", re.IGNORECASE)
_DIGIT_RANGE = {"intl": (8, 15), "nanp": (10, 11), "trunk": (9, 13), "cn": (11, 11)}


def _after_isbn(text: str, start: int) -> bool:
    return _ISBN.search(text, max(0, start - 12), start) is not None


def _phones(text: str, runs: list[tuple[int, int]]) -> Iterator[Span]:
    for start, end in runs:
        if end - start < 9:
            continue
        for match in _PHONE.finditer(text, start, end):
            kind = next(name for name in _DIGIT_RANGE if match.group(name) is not None)
            candidate = match.group()
            digits = len(_DIGIT.findall(candidate.replace("(0)", "")))
            low, high = _DIGIT_RANGE[kind]
            if low <= digits <= high and not _after_isbn(text, match.start()):
                yield Span("phone", match.start(), match.end(), candidate)


# --- all together ---------------------------------------------------------------------------


def find_pii(
    text: str, kinds: tuple[str, ...] = KINDS, include_private_ips: bool = False
) -> list[Span]:
    """Non-overlapping findings of the requested kinds, in text order.

    Detectors run in the order of `kinds` as given in `KINDS`; a later finding that
    overlaps an earlier one is dropped (a card number is not also a phone number).
    """
    runs = _number_runs(text)
    # Each detector runs only when its trigger ("@", a run of digits, two colons) occurs.
    detectors: list[Iterator[Span]] = []
    if "email" in kinds and "@" in text:
        detectors.append(_emails(text))
    if runs and "credit_card" in kinds:
        detectors.append(_cards(text, runs))
    if "ip_address" in kinds:
        if runs:
            detectors.append(_ipv4_addresses(text, runs, include_private_ips))
        if ":" in text and _IPV6_HINT.search(text):
            detectors.append(_ipv6_addresses(text, include_private_ips))
    if runs and "phone" in kinds:
        detectors.append(_phones(text, runs))
    taken: list[Span] = []  # sorted by start, never overlapping
    starts: list[int] = []
    for spans in detectors:
        for span in spans:
            index = bisect.bisect_right(starts, span.start)
            if index and taken[index - 1].end > span.start:
                continue
            if index < len(taken) and taken[index].start < span.end:
                continue
            taken.insert(index, span)
            starts.insert(index, span.start)
    return taken
