"""Personal data to plant in documents, and harmless look-alikes to test for false alarms.

PII: e-mail addresses (reserved example domains), phone numbers in each language's national
formats, IPv4/IPv6 addresses in public and private ranges, and credit-card numbers that pass
the Luhn check. Look-alikes: version strings, dates, ISBNs, build numbers with four dotted
parts, and 16-digit order numbers that fail the Luhn check.

Example:
    >>> import random
    >>> sentence, items = pii_sentence("en", random.Random(5))
    >>> all(item["value"] in sentence for item in items)
    True
"""

from __future__ import annotations

import ipaddress
import random
from typing import Any

from mixplane.synth.lexicon import between, pick

EMAIL_DOMAINS = ("example.com", "example.org", "example.net", "mail.example.com")
LOCAL_PARTS = ("info", "contact", "support", "office", "hello", "press", "admin")
PII_TEMPLATES = {
    "en": (
        "For more information, write to {email} or call {phone}.",
        "You can reach our office at {phone} from Monday to Friday.",
        "Questions about this article can be sent to {email}.",
        "The server at {ipv4} stopped responding at midnight, and {ipv6} was slow too.",
        "My card number is {card}, can you check why the payment failed?",
    ),
    "de": (
        "Für weitere Informationen schreiben Sie an {email} oder rufen Sie {phone} an.",
        "Unser Büro erreichen Sie unter {phone} von Montag bis Freitag.",
        "Der Server unter {ipv4} war gestern nicht erreichbar, {ipv6} auch nicht.",
        "Meine Kartennummer ist {card}, warum wurde die Zahlung abgelehnt?",
    ),
    "fr": (
        "Pour plus d'informations, écrivez à {email} ou appelez le {phone}.",
        "Vous pouvez joindre notre bureau au {phone} du lundi au vendredi.",
        "Le serveur {ipv4} ne répond plus depuis hier soir, ni {ipv6}.",
        "Mon numéro de carte est {card}, pouvez-vous vérifier le paiement ?",
    ),
    "es": (
        "Para más información, escriba a {email} o llame al {phone}.",
        "Puede contactar con nuestra oficina en el {phone} de lunes a viernes.",
        "El servidor {ipv4} dejó de responder anoche, y también {ipv6}.",
        "Mi número de tarjeta es {card}, ¿pueden revisar el pago?",
    ),
    "zh": (
        "如需了解更多信息，请发送邮件至{email}或致电{phone}。",
        "服务器{ipv4}和{ipv6}昨晚停止响应。",
        "我的卡号是{card}，请帮我查一下付款为什么失败。",
    ),
    "ja": (
        "詳しくは{email}までメール、または{phone}までお電話ください。",
        "サーバー{ipv4}と{ipv6}が昨夜から応答しません。",
        "カード番号は{card}です。支払いを確認してください。",
    ),
}
LOOKALIKE_TEMPLATES = {
    "en": (
        "Version {version} was released on {date}.",
        "The book is listed under ISBN {isbn}.",
        "Order number {order} has shipped; build {build} is required.",
    ),
    "de": (
        "Die Version {version} erschien am {date}.",
        "Das Buch ist unter der ISBN {isbn} erhältlich.",
        "Die Bestellung {order} wurde versandt, benötigt wird Build {build}.",
    ),
    "fr": (
        "La version {version} est sortie le {date}.",
        "Le livre porte l'ISBN {isbn}.",
        "La commande {order} a été expédiée, la version {build} est requise.",
    ),
    "es": (
        "La versión {version} se publicó el {date}.",
        "El libro tiene el ISBN {isbn}.",
        "El pedido {order} ya fue enviado; se necesita la compilación {build}.",
    ),
    "zh": (
        "版本{version}于{date}发布。",
        "该书的ISBN是{isbn}。",
        "订单{order}已发货，需要版本{build}。",
    ),
    "ja": ("バージョン{version}は{date}に公開されました。", "この本のISBNは{isbn}です。"),
}
_RESERVED_V4 = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
        "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/3",
    )
]  # fmt: skip


def luhn_valid(number: str) -> bool:
    """The Luhn checksum over the digits of `number` (separators ignored).

    Example:
        >>> luhn_valid("4111 1111 1111 1111"), luhn_valid("4111 1111 1111 1112")
        (True, False)
    """
    digits = [int(c) for c in number if c.isdigit()]
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2 == 1:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return bool(digits) and total % 10 == 0


def _luhn_complete(prefix: str) -> str:
    """Append the check digit that makes `prefix` pass the Luhn check."""
    for check in "0123456789":
        if luhn_valid(prefix + check):
            return prefix + check
    raise AssertionError("unreachable: one check digit always fits")


def credit_card(rng: random.Random) -> str:
    """A Visa, Mastercard or Amex number that passes the Luhn check, grouped as printed."""
    brand = pick(rng, ("visa", "mastercard", "amex"))
    if brand == "amex":
        prefix = pick(rng, ("34", "37")) + "".join(rng.choices("0123456789", k=12))
        number = _luhn_complete(prefix)
        groups = (number[:4], number[4:10], number[10:])
    else:
        start = "4" if brand == "visa" else str(between(rng, 51, 55))
        prefix = start + "".join(rng.choices("0123456789", k=15 - len(start)))
        number = _luhn_complete(prefix)
        groups = tuple(number[i : i + 4] for i in range(0, 16, 4))
    return pick(rng, (" ", "-", "")).join(groups)


def order_number(rng: random.Random) -> str:
    """Sixteen digits grouped like a card number that fail the Luhn check."""
    while True:
        digits = str(between(rng, 1, 9)) + "".join(rng.choices("0123456789", k=15))
        if not luhn_valid(digits):
            return " ".join(digits[i : i + 4] for i in range(0, 16, 4))


def _digits(rng: random.Random, count: int) -> str:
    return "".join(rng.choices("0123456789", k=count))


def phone(rng: random.Random, language: str) -> str:
    """A phone number in a national format of the language's main countries."""
    d = _digits
    formats = {
        "en": (
            lambda: f"({between(rng, 201, 989)}) 555-01{d(rng, 2)}",
            lambda: f"+1 {between(rng, 201, 989)}-555-01{d(rng, 2)}",
            lambda: f"+44 20 7946 0{d(rng, 3)}",
            lambda: f"07700 900{d(rng, 3)}",
        ),
        "de": (
            lambda: f"+49 30 {d(rng, 8)}",
            lambda: f"0{pick(rng, ('30', '40', '89', '221'))} {d(rng, 7)}",
            lambda: f"0151 {d(rng, 8)}",
        ),
        "fr": (
            lambda: f"+33 1 {d(rng, 2)} {d(rng, 2)} {d(rng, 2)} {d(rng, 2)}",
            lambda: f"06 {d(rng, 2)} {d(rng, 2)} {d(rng, 2)} {d(rng, 2)}",
        ),
        "es": (lambda: f"+34 6{d(rng, 2)} {d(rng, 3)} {d(rng, 3)}", lambda: f"91 {d(rng, 7)}"),
        "zh": (lambda: f"+86 138 {d(rng, 4)} {d(rng, 4)}", lambda: f"139-{d(rng, 4)}-{d(rng, 4)}"),
        "ja": (lambda: f"03-{d(rng, 4)}-{d(rng, 4)}", lambda: f"+81 90-{d(rng, 4)}-{d(rng, 4)}"),
    }
    return pick(rng, formats[language])()


def email(rng: random.Random, first: str, last: str) -> str:
    """An address at a reserved example domain, personal or a role address."""
    if rng.random() < 0.3:
        local = pick(rng, LOCAL_PARTS)
    else:
        shapes = (f"{first}.{last}", f"{first[0]}{last}", f"{first}{between(rng, 1, 99)}")
        local = pick(rng, shapes).lower()
    return f"{local}@{pick(rng, EMAIL_DOMAINS)}"


def ipv4(rng: random.Random, private: bool) -> str:
    if private:
        return pick(
            rng,
            (
                f"10.{between(rng, 0, 255)}.{between(rng, 0, 255)}.{between(rng, 1, 254)}",
                f"172.{between(rng, 16, 31)}.{between(rng, 0, 255)}.{between(rng, 1, 254)}",
                f"192.168.{between(rng, 0, 255)}.{between(rng, 1, 254)}",
            ),
        )
    while True:
        address = ipaddress.IPv4Address(rng.getrandbits(32))
        if not any(address in network for network in _RESERVED_V4):
            return str(address)


def ipv6(rng: random.Random, private: bool) -> str:
    if private and rng.random() < 0.5:
        value = (0xFD << 120) | rng.getrandbits(112)  # unique local, fd00::/8
    elif private:
        value = (0xFE80 << 112) | rng.getrandbits(64)  # link-local, fe80::/64
    else:
        # Global unicast from regional registries' blocks; zero middle groups as usual.
        value = (between(rng, 0x2400, 0x2A0F) << 112) | (rng.getrandbits(32) << 80)
        value |= rng.getrandbits(16)
    return ipaddress.IPv6Address(value).compressed


def _isbn(rng: random.Random) -> str:
    body = "978" + _digits(rng, 9)
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(body))
    check = (10 - total % 10) % 10
    return f"{body[:3]}-{body[3]}-{body[4:6]}-{body[6:]}-{check}"


def _date(rng: random.Random, language: str) -> str:
    year, month, day = between(rng, 2005, 2024), between(rng, 1, 12), between(rng, 1, 28)
    if language == "de":
        return f"{day:02d}.{month:02d}.{year}"
    if language in ("fr", "es"):
        return f"{day:02d}/{month:02d}/{year}"
    return f"{year}-{month:02d}-{day:02d}"


def pii_sentence(language: str, rng: random.Random) -> tuple[str, list[dict[str, Any]]]:
    """A sentence carrying PII, and the items in it (type, value, and scope for IPs)."""
    template = pick(rng, PII_TEMPLATES[language])
    first, last = pick(rng, _ASCII_NAMES), pick(rng, _ASCII_SURNAMES)
    fields: dict[str, dict[str, Any]] = {}
    if "{email}" in template:
        fields["email"] = {"type": "email", "value": email(rng, first, last)}
    if "{phone}" in template:
        fields["phone"] = {"type": "phone", "value": phone(rng, language)}
    if "{ipv4}" in template:
        private = rng.random() < 0.5
        scope = "private" if private else "public"
        fields["ipv4"] = {"type": "ipv4", "value": ipv4(rng, private), "scope": scope}
    if "{ipv6}" in template:
        private = rng.random() < 0.5
        scope = "private" if private else "public"
        fields["ipv6"] = {"type": "ipv6", "value": ipv6(rng, private), "scope": scope}
    if "{card}" in template:
        fields["card"] = {"type": "credit_card", "value": credit_card(rng)}
    sentence = template.format(**{key: item["value"] for key, item in fields.items()})
    return sentence, list(fields.values())


def lookalike_sentence(language: str, rng: random.Random) -> tuple[str, list[dict[str, Any]]]:
    """A sentence with numbers that resemble PII but are not, and what they are."""
    template = pick(rng, LOOKALIKE_TEMPLATES[language])
    makers = {
        "version": lambda: f"v{between(rng, 1, 12)}.{between(rng, 0, 20)}.{between(rng, 0, 9)}",
        "date": lambda: _date(rng, language),
        "isbn": lambda: _isbn(rng),
        "order": lambda: order_number(rng),
        "build": lambda: f"10.0.{between(rng, 10000, 22631)}.{between(rng, 1000, 4000)}",
    }
    values = {key: make() for key, make in makers.items() if "{" + key + "}" in template}
    items = [{"type": key, "value": value} for key, value in values.items()]
    return template.format(**values), items


_ASCII_NAMES = ("anna", "james", "maria", "lukas", "sophie", "carlos", "emma", "noah", "lea")
_ASCII_SURNAMES = ("smith", "mueller", "martin", "garcia", "wang", "tanaka", "novak", "rossi")
