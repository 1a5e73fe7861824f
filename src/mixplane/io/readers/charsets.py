"""Which character set a web page is in, and its text decoded without losing the page.

The order follows what browsers do, simplified: a byte-order mark, then the charset of the
HTTP `Content-Type` header, then an HTML `<meta charset>` or `<meta http-equiv>` in the
first `META_SCAN` bytes, then detection from the bytes: UTF-8 when the page is valid UTF-8
(text in a legacy charset almost never is, and most of the web is UTF-8), else the charset
uchardet guesses (through resiliparse). Labels are mapped as the WHATWG encoding standard
says (`iso-8859-1` and `us-ascii` are read as windows-1252, `gb2312` as GBK); a label Python
does not know is skipped. The first candidate that decodes the whole payload strictly wins;
when none does, the first candidate decodes it with U+FFFD for the bytes it cannot read, so
a page with a few broken bytes is kept rather than lost.

Example:
    >>> decode_page("caf\\xe9".encode("latin-1"), "iso-8859-1")
    ('café', 'cp1252', False)
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator

from resiliparse.parse.encoding import detect_encoding, map_encoding_to_html5

# Browsers look for a meta charset in the first 1024 bytes; pages with long inline scripts
# or styles before it are common in crawls, so a little more is read.
META_SCAN = 4096
_META = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", flags=re.IGNORECASE)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def charset_label(content_type: str | None) -> str | None:
    """The `charset` parameter of a Content-Type value, if any.

    Example:
        >>> charset_label('text/html; Charset="Shift_JIS"')
        'Shift_JIS'
    """
    for part in (content_type or "").split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip("\"'"):
            return value.strip().strip("\"'")
    return None


def meta_charset(data: bytes) -> str | None:
    """The charset an HTML page declares in a `<meta>` tag within its first `META_SCAN` bytes."""
    found = _META.search(data[:META_SCAN])
    return found.group(1).decode("ascii") if found else None


def codec_name(label: str | None) -> str | None:
    """The Python codec a charset label means on the web, or None when it is unknown."""
    if not label:
        return None
    try:
        codecs.lookup(label)
    except LookupError:
        return None
    return map_encoding_to_html5(label)


def candidates(data: bytes, declared: str | None, html: bool) -> Iterator[str]:
    """The codecs to try for `data`, in order: BOM, HTTP header, meta tag, then detection:
    UTF-8, then uchardet's guess. Lazily: uchardet (the costly step) runs only when
    the others fail."""
    seen = set()
    steps = (
        lambda: next((codec for bom, codec in _BOMS if data.startswith(bom)), None),
        lambda: codec_name(declared),
        lambda: codec_name(meta_charset(data)) if html else None,
        lambda: "utf-8",
        lambda: detect_encoding(data),
    )
    for step in steps:
        codec = step()
        if codec and codec not in seen:
            seen.add(codec)
            yield codec


def decode_page(data: bytes, declared: str | None, html: bool = True) -> tuple[str, str, bool]:
    """`(text, codec, replaced)`: the page's text, the codec that read it, and whether bytes
    it could not read became U+FFFD (only when no candidate reads the whole page)."""
    first = None
    for codec in candidates(data, declared, html):
        first = first or codec
        try:
            return data.decode(codec), codec, False
        except UnicodeDecodeError as error:
            if error.reason == "unexpected end of data":
                # A page cut inside its last character (a crawler's size limit): the codec
                # is right, only that character is lost.
                return data.decode(codec, errors="replace"), codec, True
        except LookupError:
            continue
    return data.decode(first or "utf-8", errors="replace"), first or "utf-8", True
