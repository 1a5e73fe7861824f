"""Which documents are HTML: by content type, or by sniffing the text when there is none."""

from __future__ import annotations

import re

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# A page starts (after an optional XML declaration, comments and whitespace) with one of
# these; a plain-text document that merely mentions tags does not.
_PAGE_START = re.compile(
    r"\A(?:\s|<\?xml[^>]*>|<!--.*?-->)*<(?:!doctype\s+html|html|head|body)\b",
    re.IGNORECASE | re.DOTALL,
)
# Fragments without <html>: starting with a tag and closing common block elements.
_CLOSING_TAG = re.compile(r"</(?:p|div|span|a|li|ul|ol|table|tr|td|h[1-6]|section|article)>", re.I)
_SNIFF_CHARS = 4096


def looks_like_html(text: str) -> bool:
    """Whether a document without a content type is an HTML page or fragment.

    Example:
        >>> looks_like_html("<!DOCTYPE html><html><body>x</body></html>")
        True
        >>> looks_like_html("Use <b> for bold text.")
        False
    """
    head = text[:_SNIFF_CHARS]
    if _PAGE_START.match(head):
        return True
    stripped = head.lstrip()
    return stripped.startswith("<") and len(_CLOSING_TAG.findall(stripped)) >= 2
