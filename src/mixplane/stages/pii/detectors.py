"""Finding personal data in text: e-mail addresses, phone numbers, IP addresses, card numbers.

Each detector is a precompiled pattern that proposes candidates and a check that rejects
look-alikes: file names like `icon@2x.png`, private and reserved IP ranges, version numbers,
dates, ISBNs, and digit runs that fail the Luhn check. `find_pii` runs the detectors whose
trigger character occurs in the text and resolves overlaps (earlier kinds win).

Example:
    >>> spans = find_pii("Mail jo@example.org or call +44 20 7946 0958")
    >>> [(span.kind, span.text) for span in spans]
    [('email', 'jo@example.org'), ('phone', '+44 20 7946 0958')]
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Callable, Iterator
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
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)
# Image and code file suffixes: "logo@2x.png" is a file, not an address.
_FILE_SUFFIXES_TEXT = (
    "png jpg jpeg gif svg webp ico bmp tif tiff avif css js mjs ts jsx tsx json map html "
    "htm xml pdf zip gz txt md py rb go rs java c h cpp php "
)
_FILE_SUFFIXES = frozenset(_FILE_SUFFIXES_TEXT.split())


def _emails(text: str) -> Iterator[Span]:
    # Python's `re` cannot look for the "@" first, so the pattern is tried only near each one.
    position = text.find("@")
    while position != -1:
        window_start = max(0, position - 64)
        match = _EMAIL.search(text, window_start, position + 256)
        if match and match.start() <= position < match.end():
            address = match.group()
            local = address.partition("@")[0]
            suffix = address.rpartition(".")[2].lower()
            if not local.endswith(".") and ".." not in local and suffix not in _FILE_SUFFIXES:
                yield Span("email", match.start(), match.end(), address)
            position = text.find("@", match.end())
        else:
            position = text.find("@", position + 1)


# --- card numbers ---------------------------------------------------------------------------

_CARD = re.compile(r"(?<![\w.+-])\d(?:[ -]?\d){12,18}(?![\w]|[.,-]\d)")
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


def _cards(text: str) -> Iterator[Span]:
    for match in _CARD.finditer(text):
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

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
# Not inside a longer dotted number, nor the IPv4 tail of an IPv6 address ("::ffff:1.2.3.4").
_IPV4 = re.compile(rf"(?<![\w.-])(?<![0-9A-Fa-f]:){_OCTET}(?:\.{_OCTET}){{3}}(?![\w-]|\.\d)")
# Candidates only: ipaddress validates. The lookahead insists on a colon within 5 characters
# so ordinary words made of a-f letters are skipped at once.
_IPV6 = re.compile(
    r"(?<![\w:.])(?=[0-9A-Fa-f]{0,4}:)[0-9A-Fa-f:]{2,39}(?:\d{1,3}(?:\.\d{1,3}){3})?(?![\w:]|\.\d)"
)


def _public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return address.is_global and not (address.is_multicast or address.is_reserved)


def _ip_addresses(text: str, include_private: bool) -> Iterator[Span]:
    for match in _IPV4.finditer(text):
        address = ipaddress.IPv4Address(match.group())
        if include_private or _public(address):
            yield Span("ip_address", match.start(), match.end(), match.group())
    if "::" not in text and text.count(":") < 7:
        return
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
    r"(?<![\w.+/-])(?:"
    # international: +country code, then groups; "+44 (0)20 ..." keeps the trunk zero
    r"(?P<intl>\+[1-9]\d{0,2}(?:[ .-]?\(0\))?(?:[ .-]?\(?\d{1,5}\)?)(?:[ .-]?\d{1,5}){1,5})"
    # North American: (555) 123-4567, 555-123-4567, 1-800-555-0199
    r"|(?P<nanp>(?:1[ .-])?"
    r"(?:\([2-9]\d{2}\)[ ]?\d{3}[ .-]\d{4}|[2-9]\d{2}(?P<ns>[ .-])\d{3}(?P=ns)\d{4}))"
    # national with a trunk zero: 020 7946 0958, 030/12345678, 03-1234-5678, (0171) 1234567
    r"|(?P<trunk>(?:\(0\d{1,4}\)[ ]?|0\d{1,4}[ /.-])"
    r"\d{2,8}(?:(?P<tg>[ .-])\d{2,8}(?:(?P=tg)\d{2,8}){0,2})?)"
    # Chinese mobile numbers: 138 0013 8000
    r"|(?P<cn>1[3-9]\d(?P<cs>[ -])\d{4}(?P=cs)\d{4})"
    r")(?![\w]|[.,/-]\d)"
)
_DIGIT = re.compile(r"\d")
_ISBN = re.compile(r"ISBN(?:-1[03])?:?\s*$", re.IGNORECASE)
_DIGIT_RANGE = {"intl": (8, 15), "nanp": (10, 11), "trunk": (9, 13), "cn": (11, 11)}


def _after_isbn(text: str, start: int) -> bool:
    return _ISBN.search(text, max(0, start - 12), start) is not None


def _phones(text: str) -> Iterator[Span]:
    for match in _PHONE.finditer(text):
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
    """Non-overlapping findings of the requested kinds, in text order."""
    has_digit = _DIGIT.search(text) is not None
    # Each detector runs only when its trigger ("@", a digit, "::") occurs in the text.
    detectors: list[Callable[[], Iterator[Span]]] = []
    if "email" in kinds and "@" in text:
        detectors.append(lambda: _emails(text))
    if has_digit and "credit_card" in kinds:
        detectors.append(lambda: _cards(text))
    if (has_digit or "::" in text) and "ip_address" in kinds:
        detectors.append(lambda: _ip_addresses(text, include_private_ips))
    if has_digit and "phone" in kinds:
        detectors.append(lambda: _phones(text))
    taken: list[Span] = []  # sorted by start, never overlapping
    starts: list[int] = []
    for detect in detectors:
        for span in detect():
            index = bisect.bisect_right(starts, span.start)
            if index and taken[index - 1].end > span.start:
                continue
            if index < len(taken) and taken[index].start < span.end:
                continue
            taken.insert(index, span)
            starts.insert(index, span.start)
    return taken
