"""Mixtures several test files build, written once."""

from __future__ import annotations


def three_sources() -> dict:
    """The README's components: wiki, code and German web text, weighted 5:3:2.

    A new dict each call, so a test may change its copy. Loader tests write catalogs with
    these sources and mix them with their own seeds and sequence lengths."""
    return {
        "wiki": {"where": "source = 'wiki'", "weight": 0.5},
        "code": {"where": "source = 'code'", "weight": 0.3},
        "web_de": {"where": "source = 'web' AND language = 'de'", "weight": 0.2},
    }
