"""`extract`: HTML to its main text, with navigation, footers, banners and scripts removed.

Documents are HTML when their `content_type` metadata says so (the HTML-file and WARC
readers set it) or, without that metadata, when the text itself looks like an HTML page.
Plain text passes through untouched. Two engines: `trafilatura` (the default) and
`resiliparse` (much faster; see `Extract`). Both are deterministic and offline.

Example:
    >>> from mixplane.document import Document
    >>> stage = Extract(favor="precision")
    >>> html = "<html><head><title>Hi</title></head><body><article><p>"
    >>> doc = Document("a", html + "A long enough paragraph. " * 8 + "</p></article></body></html>",
    ...                "web", {"content_type": "text/html"})
    >>> stage.apply(doc).metadata["title"]
    'Hi'
"""

from mixplane.stages.extract.detect import HTML_TYPES, looks_like_html
from mixplane.stages.extract.stage import ENGINES, Extract

__all__ = ["ENGINES", "HTML_TYPES", "Extract", "looks_like_html"]
