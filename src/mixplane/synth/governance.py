"""Licence statements and AI opt-outs planted in web pages (`mixplane synth --governance`),
with their ground truth in `truth/governance.parquet`.

Each original web page gets, drawn independently from its own generator (so the corpus is
otherwise the same as without the option, document for document):

- a licence in one of six forms (`FORMS`, about a third of pages): `<link rel="license">`
  in the head, `<a rel="license">` in the footer, a `<meta>` tag, schema.org JSON-LD or
  microdata, or a bare Creative Commons badge link; written as a URL or a name as sites do;
- an opt-out (about a sixth of pages): `<meta name="robots">` with `noai`, an
  `X-Robots-Tag: noai` response header, a `tdm-reservation: 1` header (with a policy now
  and then) or `<meta name="tdm-reservation" content="1">`; single HTML files have no
  headers, so they get the `<meta>` forms only;
- distractors that are neither: a `dc.rights` copyright line, a `rel="license"` link to the
  site's own terms, `robots` `noindex, nofollow`, `tdm-reservation` `0`.

Exact copies carry their original's page and headers, and so its truth; a copy into a
single HTML file loses the headers, and its truth says so.

Example:
    >>> import random
    >>> plant = plant_signals(random.Random(3), "<html><head></head><body><footer></footer>"
    ...                       "</body></html>", headers_allowed=True)
    >>> sorted(plant.truth)
    ['license', 'license_form', 'opt_out', 'opt_out_form']
"""

from __future__ import annotations

import random
from contextlib import ExitStack
from dataclasses import dataclass, field
from html import escape
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from mixplane.io.atomic import atomic_open, join_url

TRUTH_FILE = "truth/governance.parquet"
ROW_GROUP = 50_000
TRUTH_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("source", pa.string()),
        ("license", pa.string()),
        ("license_form", pa.string()),
        ("opt_out", pa.bool_()),
        ("opt_out_form", pa.string()),
    ]
)
FORMS = {
    "rel_link": 0.08, "rel_a": 0.08, "meta": 0.05, "json_ld": 0.05, "microdata": 0.03,
    "cc_badge": 0.03,
}  # fmt: skip
OPT_OUTS = {"meta_robots": 0.05, "x_robots_tag": 0.04, "tdm_header": 0.03, "tdm_meta": 0.03}
HEADER_FORMS = {"x_robots_tag": "meta_robots", "tdm_header": "tdm_meta"}
DISTRACTORS = {"dc_rights": 0.05, "terms_link": 0.03, "noindex": 0.06, "tdm_zero": 0.02}
# (URL, SPDX) and (name, SPDX): how licences are written on pages.
LICENSE_URLS = (
    ("https://creativecommons.org/licenses/by/4.0/", "CC-BY-4.0"),
    ("https://creativecommons.org/licenses/by-sa/4.0/deed.en", "CC-BY-SA-4.0"),
    ("http://creativecommons.org/licenses/by-nc/3.0/", "CC-BY-NC-3.0"),
    ("https://creativecommons.org/licenses/by-nc-sa/4.0/legalcode", "CC-BY-NC-SA-4.0"),
    ("//creativecommons.org/licenses/by-nd/2.5/", "CC-BY-ND-2.5"),
    ("https://creativecommons.org/licenses/by-sa/3.0/de/", "CC-BY-SA-3.0-DE"),
    ("https://creativecommons.org/licenses/by-nc-nd/4.0/", "CC-BY-NC-ND-4.0"),
    ("https://creativecommons.org/publicdomain/zero/1.0/", "CC0-1.0"),
    ("https://creativecommons.org/publicdomain/mark/1.0/", "PDM"),
    ("https://www.gnu.org/licenses/fdl-1.3.html", "GFDL-1.3-only"),
    ("https://opendatacommons.org/licenses/odbl/1-0/", "ODbL-1.0"),
)
LICENSE_NAMES = (
    ("CC BY-SA 4.0", "CC-BY-SA-4.0"),
    ("Creative Commons Attribution 4.0 International", "CC-BY-4.0"),
    ("CC0 1.0 Universal", "CC0-1.0"),
    ("GNU Free Documentation License 1.3", "GFDL-1.3-only"),
    ("MIT License", "MIT"),
    ("Attribution-NonCommercial-ShareAlike 3.0 Unported (CC BY-NC-SA 3.0)", "CC-BY-NC-SA-3.0"),
)
_TDM_POLICY = "https://{domain}/tdm-policy.json"


@dataclass
class Planted:
    """A page with its signals: the HTML, response headers and what they mean."""

    html: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    truth: dict[str, Any] = field(default_factory=dict)


def plant_signals(rng: random.Random, html: str, headers_allowed: bool) -> Planted:
    """Plant a licence, an opt-out and distractors in a page, as drawn from `rng`."""
    planted = Planted(html)
    truth = {"license": None, "license_form": None, "opt_out": False, "opt_out_form": None}
    planted.truth = truth
    form = _draw(rng, FORMS)
    if form is not None:
        truth["license"], truth["license_form"] = _license(rng, planted, form), form
    opt_out = _draw(rng, OPT_OUTS)
    if opt_out is not None and not headers_allowed:
        opt_out = HEADER_FORMS.get(opt_out, opt_out)
    if opt_out is not None:
        _opt_out(rng, planted, opt_out)
        truth["opt_out"], truth["opt_out_form"] = True, opt_out
    distractor = _draw(rng, DISTRACTORS)
    # A distractor never sits beside the signal it imitates.
    clashes = {"terms_link": form, "noindex": opt_out, "tdm_zero": opt_out}
    if distractor is not None and clashes.get(distractor) is None:
        _distract(planted, distractor)
    return planted


def truth_as_written(truth: dict[str, Any], source: str) -> dict[str, Any]:
    """A copy's truth where it lands: a single HTML file keeps no response headers."""
    if source == "web_html" and truth["opt_out_form"] in HEADER_FORMS:
        return truth | {"opt_out": False, "opt_out_form": None}
    return truth


def _draw(rng: random.Random, weights: dict[str, float]) -> str | None:
    point = rng.random()
    for key, weight in weights.items():
        point -= weight
        if point < 0:
            return key
    return None


def _license(rng: random.Random, planted: Planted, form: str) -> str:
    url, spdx = rng.choice(LICENSE_URLS)
    if form == "rel_link":
        _head(planted, f'<link rel="license" href="{url}">')
    elif form == "rel_a":
        _footer(planted, f'<p><a rel="license noopener" href="{url}">Licence</a></p>')
    elif form == "meta":
        if rng.random() < 0.5:
            url, spdx = rng.choice(LICENSE_NAMES)
        name = rng.choice(("license", "dcterms.license", "DC.rights"))
        _head(planted, f'<meta name="{name}" content="{escape(url)}">')
    elif form == "json_ld":
        data = {"@context": "https://schema.org", "@type": "Article", "license": url}
        if rng.random() < 0.3:
            data = {"@context": "https://schema.org", "@graph": [{"@type": "WebPage"}, data]}
        _head(planted, f'<script type="application/ld+json">{orjson.dumps(data).decode()}</script>')
    elif form == "microdata":
        _footer(
            planted,
            '<div itemscope itemtype="https://schema.org/CreativeWork">'
            f'<link itemprop="license" href="{url}"></div>',
        )
    else:
        url, spdx = rng.choice(LICENSE_URLS[:9])  # badges are Creative Commons ones
        _footer(planted, f'<a href="{url}"><img alt="Creative Commons" src="/cc.png"></a>')
    return spdx


def _opt_out(rng: random.Random, planted: Planted, form: str) -> None:
    if form == "meta_robots":
        content = rng.choice(("noai", "noai, noimageai", "index, follow, noai", "NoAI"))
        name = rng.choice(("robots", "robots", "CCBot"))
        _head(planted, f'<meta name="{name}" content="{content}">')
    elif form == "x_robots_tag":
        planted.headers.append(("X-Robots-Tag", rng.choice(("noai", "noai, noimageai"))))
    elif form == "tdm_header":
        planted.headers.append(("tdm-reservation", "1"))
        if rng.random() < 0.5:
            planted.headers.append(("tdm-policy", _TDM_POLICY.format(domain="example.org")))
    else:
        _head(planted, '<meta name="tdm-reservation" content="1">')


def _distract(planted: Planted, kind: str) -> None:
    if kind == "dc_rights":
        _head(planted, '<meta name="dc.rights" content="© 2021 All rights reserved.">')
    elif kind == "terms_link":
        _footer(planted, '<p><a rel="license" href="/terms">Terms of use</a></p>')
    elif kind == "noindex":
        _head(planted, '<meta name="robots" content="noindex, nofollow">')
    else:
        _head(planted, '<meta name="tdm-reservation" content="0">')


def _head(planted: Planted, tag: str) -> None:
    planted.html = planted.html.replace("</head>", f"{tag}\n</head>", 1)


def _footer(planted: Planted, tag: str) -> None:
    planted.html = planted.html.replace("</footer>", f"{tag}\n</footer>", 1)


class GovernanceTruth:
    """Writes `truth/governance.parquet`: per web document, what was planted."""

    def __init__(self, out: str):
        self._stack = ExitStack()
        handle = self._stack.enter_context(atomic_open(join_url(out, TRUTH_FILE)))
        self._writer = pq.ParquetWriter(handle, TRUTH_SCHEMA, compression="zstd")
        self._rows: list[dict[str, Any]] = []

    def document(self, doc_id: str, source: str, truth: dict[str, Any]) -> None:
        self._rows.append({"id": doc_id, "source": source, **truth_as_written(truth, source)})
        if len(self._rows) >= ROW_GROUP:
            self._flush()

    def close(self) -> None:
        self._flush()
        self._writer.close()
        self._stack.close()

    def _flush(self) -> None:
        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=TRUTH_SCHEMA))
            self._rows = []
