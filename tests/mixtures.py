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


def demo_mixture() -> dict:
    """The service tests' mixture over the demo's catalog: wiki and code, 0.6 and 0.4."""
    return {
        "seq_len": 128,
        "datasets": ["demo"],
        "components": {
            "wiki": {"where": "source = 'wiki'", "weight": 0.6},
            "code": {"where": "source = 'code'", "weight": 0.4},
        },
    }
