"""The report as one self-contained HTML file: inline CSS, bar charts drawn as inline SVG,
no script, font or image fetched from anywhere (it opens offline, and a mail attachment
shows the same).

Example:
    >>> html = render_html(report)  # doctest: +SKIP
    >>> "<svg" in html and "<script" not in html  # doctest: +SKIP
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import jinja2

from mixplane.report.model import Breakdown, Report

TEMPLATE = "report.html.j2"
BAR_WIDTH = 280  # pixels of the longest bar
BAR_HEIGHT = 18
LABEL_WIDTH = 180


@dataclass(frozen=True)
class Bar:
    """One bar of a chart: its label, value and width in pixels."""

    label: str
    value: int
    width: float
    y: int


def bars(breakdown: Breakdown) -> list[Bar]:
    """The bars of a breakdown's tokens, scaled so the largest spans `BAR_WIDTH`.

    Example:
        >>> from mixplane.report.model import Row
        >>> [b.width for b in bars(Breakdown("source", (Row("a", 1, 10), Row("b", 1, 5)), 2))]
        [280.0, 140.0]
    """
    largest = max((row.tokens for row in breakdown.rows), default=0) or 1
    return [
        Bar(row.key, row.tokens, round(BAR_WIDTH * row.tokens / largest, 1), n * (BAR_HEIGHT + 4))
        for n, row in enumerate(breakdown.rows)
    ]


def number(value: int | None) -> str:
    """A count with thousands separators (empty when unknown).

    Example:
        >>> number(1234567), number(None)
        ('1,234,567', '')
    """
    return "" if value is None else f"{value:,}"


def share(part: int, whole: int) -> str:
    """`part` as a percentage of `whole`, one decimal.

    Example:
        >>> share(1, 3)
        '33.3%'
    """
    return f"{100 * part / whole:.1f}%" if whole else "-"


def render_html(report: Report) -> str:
    """The report as a complete HTML page (values escaped: URLs and licences come from
    crawled pages)."""
    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(_template), autoescape=True, keep_trailing_newline=True
    )
    environment.filters["number"] = number
    template = environment.get_template(TEMPLATE)
    return template.render(
        report=report,
        bars=bars,
        share=share,
        bar_height=BAR_HEIGHT,
        label_width=LABEL_WIDTH,
        chart_width=LABEL_WIDTH + BAR_WIDTH + 60,
    )


def _template(name: str) -> str:
    return resources.files("mixplane.report").joinpath(name).read_text(encoding="utf-8")
