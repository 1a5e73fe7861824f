"""The `pii` stage: what it finds, what it must leave alone, and what it does with findings."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixplane.document import Document, Drop
from mixplane.errors import ConfigError
from mixplane.stages.build import build_stage
from mixplane.stages.pii import KINDS, Pii, detectors, find_pii, luhn_valid


def found(text: str, **options) -> list[tuple[str, str]]:
    return [(span.kind, span.text) for span in find_pii(text, **options)]


POSITIVES = [
    # e-mail
    ("Write to maria.garcia@example.com for details.", "email", "maria.garcia@example.com"),
    ("Contact: j.o'neil+news@mail.example.co.uk", "email", "neil+news@mail.example.co.uk"),
    ("請聯繫張偉zhang.wei@example.cn取得資料", "email", "zhang.wei@example.cn"),
    ("<a href='mailto:support@shop-online.de'>", "email", "support@shop-online.de"),
    ("Questions? sales_team@bigcorp.io.", "email", "sales_team@bigcorp.io"),
    # phone numbers, international and national formats
    ("Call us at +1 415 555 0132 today", "phone", "+1 415 555 0132"),
    ("London office: +44 20 7946 0958", "phone", "+44 20 7946 0958"),
    ("Berlin: +49 (0)30 1234567", "phone", "+49 (0)30 1234567"),
    ("Tokyo +81-3-1234-5678 (main)", "phone", "+81-3-1234-5678"),
    ("Mobile +86 138 0013 8000.", "phone", "+86 138 0013 8000"),
    ("WhatsApp +971501234567", "phone", "+971501234567"),
    ("Tel. (555) 123-4567 ext. 2", "phone", "(555) 123-4567"),
    ("Fax: 555.123.4567", "phone", "555.123.4567"),
    ("Toll free 1-800-555-0199!", "phone", "1-800-555-0199"),
    ("Ruf an: 030 12345678", "phone", "030 12345678"),
    ("Telefon 0171/1234567", "phone", "0171/1234567"),
    ("Appelez le 01 23 45 67 89", "phone", "01 23 45 67 89"),
    ("Call 020 7946 0958 now", "phone", "020 7946 0958"),
    ("電話：03-1234-5678", "phone", "03-1234-5678"),
    ("联系电话010-12345678", "phone", "010-12345678"),
    ("手机 138 0013 8000", "phone", "138 0013 8000"),
    ("اتصل على +971 50 123 4567 شكرا", "phone", "+971 50 123 4567"),
    # IP addresses
    ("Resolver 8.8.8.8 answered", "ip_address", "8.8.8.8"),
    ("client=203.0.114.25:443", "ip_address", "203.0.114.25"),
    ("服务器8.8.4.4已经", "ip_address", "8.8.4.4"),
    ("IPv6 2001:4860:4860::8888 works", "ip_address", "2001:4860:4860::8888"),
    ("peer 2a00:1450:4001:829::200e.", "ip_address", "2a00:1450:4001:829::200e"),
    (
        "full 2606:4700:4700:0000:0000:0000:0000:1111 form",
        "ip_address",
        "2606:4700:4700:0000:0000:0000:0000:1111",
    ),
    # card numbers (test numbers of the networks; all pass Luhn)
    ("Visa 4111 1111 1111 1111 exp 12/27", "credit_card", "4111 1111 1111 1111"),
    ("MC 5555-5555-5555-4444.", "credit_card", "5555-5555-5555-4444"),
    ("Amex 378282246310005", "credit_card", "378282246310005"),
    ("Amex 3782 822463 10005", "credit_card", "3782 822463 10005"),
    ("Discover 6011111111111117", "credit_card", "6011111111111117"),
    ("JCB 3530111333300000 🙂", "credit_card", "3530111333300000"),
]


@pytest.mark.parametrize(("text", "kind", "value"), POSITIVES)
def test_finds_personal_data(text: str, kind: str, value: str):
    assert found(text) == [(kind, value)]


NEGATIVES = [
    "Released v2.10.1 and 1.2.3 last week",
    "Windows build 10.0.19041.1234 is installed",
    "Python 3.12.1 and numpy 1.26.4",
    "Meeting on 2024-01-15 at 10:30, again on 12/05/2023 and 15.01.2024",
    "Timestamp 2024-01-15T10:30:00Z",
    "ISBN 978-3-16-148410-0 and ISBN-10: 0-306-40615-2",
    "ISBN 9783161484100",
    "Private 192.168.1.1, 10.0.0.5, 172.16.5.4 and loopback 127.0.0.1",
    "Link-local 169.254.1.1, broadcast 255.255.255.255, multicast 224.0.0.251",
    "Documentation ranges 192.0.2.1 and 198.51.100.7",
    "IPv6 loopback ::1, link-local fe80::1, unique-local fc00::1 and fd12:3456::1",
    "Docs 2001:db8::1 and mapped ::ffff:192.168.0.1",
    "Not an IP: 1.2.3.4.5 or 999.1.1.1 or 01.02.03.04",
    "Retina image logo@2x.png and sprite@3x.jpg",
    "Python decorators @property and @staticmethod",
    "Time 12:30:45, MAC 00:1A:2B:3C:4D:5E, C++ std::vector, slice a[1::2]",
    "Order 1234567890123456 failed the check",  # 16 digits, Luhn fails
    "Tracking number 4111111111111112",  # Luhn fails
    "Unix time in ms 1700000000003",  # starts with 1: no card network
    "Table: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16",
    "Population 8 045 311 447 people",
    "Amounts 1,234,567.89 and 12.345.678,90 EUR",
    "Call me at 555-1234",  # seven digits: a local number with no area, too ambiguous
    "+1 2",
    "pages 100-200",
    "price +5.00 today",
    "",
    "こんにちは、世界！🙂🚀",
    "مرحبا بالعالم",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_leaves_look_alikes_alone(text: str):
    assert found(text) == []


def test_private_addresses_only_when_asked():
    text = "hosts 192.168.1.10 and fd00::5 and 8.8.8.8"
    assert [value for _, value in found(text)] == ["8.8.8.8"]
    assert [value for _, value in found(text, include_private_ips=True)] == [
        "192.168.1.10",
        "fd00::5",
        "8.8.8.8",
    ]


def test_several_kinds_in_one_text_in_order():
    text = (
        "Ana (ana@example.org, +34 612 345 678) paid with 4111-1111-1111-1111 "
        "from 93.184.216.34; backup ana.b@example.net."
    )
    assert found(text) == [
        ("email", "ana@example.org"),
        ("phone", "+34 612 345 678"),
        ("credit_card", "4111-1111-1111-1111"),
        ("ip_address", "93.184.216.34"),
        ("email", "ana.b@example.net"),
    ]


def test_only_requested_kinds():
    text = "mail bob@example.com or call +1 415 555 0132"
    assert found(text, kinds=("phone",)) == [("phone", "+1 415 555 0132")]


@st.composite
def card_numbers(draw) -> str:
    """Luhn-valid numbers of 13-19 digits starting like a card network's (2-6)."""
    length = draw(st.integers(13, 19))
    body = str(draw(st.integers(2, 6))) + "".join(
        str(draw(st.integers(0, 9))) for _ in range(length - 2)
    )
    check = next(str(d) for d in range(10) if luhn_valid(body + str(d)))
    return body + check


def grouped(digits: str, separator: str) -> str:
    return (
        separator.join(digits[i : i + 4] for i in range(0, len(digits), 4)) if separator else digits
    )


@given(card_numbers(), st.sampled_from(["", " ", "-"]))
@settings(max_examples=200, deadline=None)
def test_luhn_valid_numbers_are_redacted_in_any_layout(digits: str, separator: str):
    number = grouped(digits, separator)
    if min(len(group) for group in number.split(separator or None)) < 3:
        number = digits  # a last group of one or two digits is not how cards are printed
    doc = Pii().apply(Document("d", f"Paid with {number}, thanks.", "web"))
    assert doc.text == "Paid with <CREDIT_CARD>, thanks."
    assert doc.metadata["pii_credit_card"] == 1


@given(card_numbers())
@settings(max_examples=200, deadline=None)
def test_a_wrong_check_digit_is_not_a_card(digits: str):
    wrong = digits[:-1] + str((int(digits[-1]) + 1) % 10)
    assert not luhn_valid(wrong)
    assert all(kind != "credit_card" for kind, _ in found(f"number {wrong} here"))


@given(st.text(st.characters(codec="utf-8"), max_size=300))
@settings(max_examples=300, deadline=None)
def test_spans_are_ordered_disjoint_and_point_into_the_text(text: str):
    spans = find_pii(text, include_private_ips=True)
    for span in spans:
        assert text[span.start : span.end] == span.text
        assert span.kind in KINDS
    for earlier, later in zip(spans, spans[1:], strict=False):
        assert earlier.end <= later.start


def test_luhn_agrees_with_the_textbook_definition():
    def textbook(number: str) -> bool:
        digits = [int(d) for d in number][::-1]
        doubled = [sum(divmod(2 * d, 10)) for d in digits[1::2]]
        return (sum(digits[::2]) + sum(doubled)) % 10 == 0

    for value in range(0, 200_000, 7):
        number = f"{value:013d}"
        assert luhn_valid(number) == textbook(number)


def test_redact_is_the_default_with_per_kind_replacements():
    stage = build_stage("pii", {"replacements": {"email": "[email]"}})
    doc = stage.apply(
        Document("d", "Mail x.y@example.org, call +44 20 7946 0958, IP 1.1.1.1", "web")
    )
    assert doc.text == "Mail [email], call <PHONE>, IP <IP_ADDRESS>"
    assert {key: doc.metadata[key] for key in Pii.adds} == {
        "pii_email": 1,
        "pii_credit_card": 0,
        "pii_ip_address": 1,
        "pii_phone": 1,
    }


def test_drop_mode_drops_documents_with_findings_and_keeps_the_rest():
    stage = build_stage("pii", {"mode": "drop"})
    dropped = stage.apply(Document("a", "card 5555 5555 5555 4444 here", "web"))
    assert dropped == Drop("contains_pii", {"credit_card": 1})
    clean = stage.apply(Document("b", "Nothing personal here, version 1.2.3.", "web"))
    assert isinstance(clean, Document)
    assert clean.text == "Nothing personal here, version 1.2.3."
    assert clean.metadata["pii_email"] == 0


def test_annotate_mode_counts_without_touching_the_text():
    text = "a@example.com b@example.com +1 415 555 0132"
    doc = build_stage("pii", {"mode": "annotate"}).apply(Document("d", text, "web"))
    assert doc.text == text
    assert (doc.metadata["pii_email"], doc.metadata["pii_phone"]) == (2, 1)


def test_batch_equals_one_by_one():
    texts = [text for text, _, _ in POSITIVES] + NEGATIVES
    stage = Pii()
    batch = stage.apply_batch([Document(str(i), t, "web") for i, t in enumerate(texts)])
    single = [stage.apply(Document(str(i), t, "web")) for i, t in enumerate(texts)]
    assert [(d.text, d.metadata) for d in batch] == [(d.text, d.metadata) for d in single]


def test_bad_options_name_the_problem():
    with pytest.raises(ConfigError, match="mode"):
        build_stage("pii", {"mode": "erase"})
    with pytest.raises(ConfigError, match="replacements"):
        build_stage("pii", {"replacements": {"ssn": "<SSN>"}})
    with pytest.raises(ConfigError, match="unknown option 'kind'.*Valid options: mode, kinds"):
        build_stage("pii", {"kind": ["email"]})


class Scanned:
    """A compiled pattern of the detectors that adds up, per pattern, the characters of text
    it is asked to scan (or to split), then scans as it would."""

    def __init__(self, pattern: re.Pattern, name: str, tally: Counter):
        self.pattern, self.name, self.tally = pattern, name, tally

    def __getattr__(self, method: str):
        def scan(string: str, *args):
            if method == "split":
                self.tally[self.name] += len(string)
            else:
                pos, endpos = (list(args) + [0, len(string)][len(args) :])[:2]
                self.tally[self.name] += max(0, min(endpos, len(string)) - pos)
            return getattr(self.pattern, method)(string, *args)

        return scan


@pytest.fixture
def scanned(monkeypatch) -> Counter:
    """Characters scanned by each of the detectors' patterns while the test runs."""
    tally: Counter = Counter()
    for name, value in vars(detectors).items():
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(detectors, name, Scanned(value, name, tally))
    return tally


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 " * 200_000, []),
        ("1." * 200_000, []),
        ("a@" * 100_000, []),
        (":" * 200_000, []),
        ("+1 " * 100_000, []),
        ("4111" * 100_000, []),
        ("x" * 1_000_000 + " bob@example.com", [("email", "bob@example.com")]),
        (
            "Call +44 20 7946 0958 or mail jo@example.org; " * 2_000,
            [("phone", "+44 20 7946 0958"), ("email", "jo@example.org")] * 2_000,
        ),
    ],
    ids=[
        "spaced-digits",
        "dotted-digits",
        "at-signs",
        "colons",
        "plus-ones",
        "one-long-number",
        "one-long-word",
        "many-findings",
    ],  # fmt: skip
)
def test_pathological_long_lines_are_read_about_once(text: str, expected: list, scanned):
    """The precise patterns run only on the runs of digits (or after their trigger), so no
    pattern reads any part of a text more than once, whatever its length or its findings:
    the work grows linearly with the text. (Each pattern's own work per starting position
    is bounded by its bounded repetitions.)"""
    assert found(text) == expected
    assert scanned and max(scanned.values()) <= 1.4 * len(text), scanned
