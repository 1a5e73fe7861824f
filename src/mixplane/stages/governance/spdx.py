"""Licence names, tags and URLs to SPDX identifiers: one pure function, `spdx_id`.

What it reads:

- licence URLs: Creative Commons deeds and legal codes of every version (1.0 to 4.0, ports
  included: `by-sa/3.0/de/` is `CC-BY-SA-3.0-DE`; a port SPDX does not list becomes the
  unported licence of its version, and a 2.1 port, which has none, is not recognized),
  `publicdomain/zero/1.0` (`CC0-1.0`) and `publicdomain/mark/1.0` (`PDM`), gnu.org,
  opensource.org, apache.org, mozilla.org, opendatacommons.org and spdx.org pages;
- SPDX identifiers in any case (`cc-by-4.0` as Hugging Face writes it);
- names as people write them: `CC BY-SA 4.0`, `Creative Commons Attribution-ShareAlike 4.0
  International`, `GPLv3`, `GNU Lesser General Public License v2.1 or later`, `Apache
  License, Version 2.0`, `MIT License`, `New BSD`, `MPL 2.0`, `ODbL`, `CC0`, `public domain`.

`None` means no identifier could be given: the caller records `unknown`. Deliberate choices:
a GNU licence without "or later" (or `+`) is the `-only` form (a URL names one version);
`PDM` (Creative Commons' Public Domain Mark, and any "public domain" statement) is not an
SPDX identifier, as SPDX has none for public domain; a Creative Commons name without a
version is not recognized (the versions' terms differ).

Example:
    >>> spdx_id("https://creativecommons.org/licenses/by-sa/4.0/deed.en")
    'CC-BY-SA-4.0'
    >>> spdx_id("Attribution-NonCommercial 3.0 Unported (CC BY-NC 3.0)")
    'CC-BY-NC-3.0'
    >>> spdx_id("GPLv2+"), spdx_id("apache license, version 2.0"), spdx_id("All rights reserved")
    ('GPL-2.0-or-later', 'Apache-2.0', None)
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

CC_VERSIONS = ("1.0", "2.0", "2.5", "3.0", "4.0")
CC_KINDS = ("BY", "BY-SA", "BY-ND", "BY-NC", "BY-NC-SA", "BY-NC-ND")
# Creative Commons ports that SPDX lists, by (kind, version, port).
CC_PORTS = frozenset(
    {
        ("BY", "2.5", "AU"), ("BY", "3.0", "AT"), ("BY", "3.0", "AU"), ("BY", "3.0", "DE"),
        ("BY", "3.0", "IGO"), ("BY", "3.0", "NL"), ("BY", "3.0", "US"),
        ("BY-NC", "3.0", "DE"), ("BY-NC-ND", "3.0", "DE"), ("BY-NC-ND", "3.0", "IGO"),
        ("BY-NC-SA", "2.0", "DE"), ("BY-NC-SA", "2.0", "FR"), ("BY-NC-SA", "2.0", "UK"),
        ("BY-NC-SA", "3.0", "DE"), ("BY-NC-SA", "3.0", "IGO"), ("BY-ND", "3.0", "DE"),
        ("BY-SA", "2.0", "UK"), ("BY-SA", "2.1", "JP"), ("BY-SA", "3.0", "AT"),
        ("BY-SA", "3.0", "DE"), ("BY-SA", "3.0", "IGO"),
    }
)  # fmt: skip
GNU_VERSIONS = {
    "GPL": ("1.0", "2.0", "3.0"),
    "LGPL": ("2.0", "2.1", "3.0"),
    "AGPL": ("1.0", "3.0"),
    "GFDL": ("1.1", "1.2", "1.3"),
}
OTHER_IDS = (
    "MIT", "Apache-2.0", "Apache-1.1", "BSD-2-Clause", "BSD-3-Clause", "MPL-2.0", "MPL-1.1",
    "ODbL-1.0", "ODC-By-1.0", "PDDL-1.0", "CC0-1.0", "Unlicense", "ISC", "Zlib", "PDM",
    "CC-PDDC", "BSL-1.0", "EPL-2.0",
)  # fmt: skip


def _all_ids() -> dict[str, str]:
    ids = [f"CC-{kind}-{version}" for kind in CC_KINDS for version in CC_VERSIONS]
    ids += [f"CC-{kind}-{version}-{port}" for kind, version, port in CC_PORTS]
    for family, versions in GNU_VERSIONS.items():
        ids += [f"{family}-{v}-{form}" for v in versions for form in ("only", "or-later")]
    return {spdx.lower(): spdx for spdx in ids + list(OTHER_IDS)}


KNOWN = _all_ids()
# Names matched whole once case, punctuation and filler words are gone (see `_words`).
NAMES = {
    "mit": "MIT", "expat": "MIT", "mit x11": "MIT",
    "apache 2": "Apache-2.0", "apache 2.0": "Apache-2.0", "asl 2.0": "Apache-2.0",
    "bsd 3 clause": "BSD-3-Clause", "new bsd": "BSD-3-Clause", "modified bsd": "BSD-3-Clause",
    "revised bsd": "BSD-3-Clause", "bsd 3": "BSD-3-Clause", "3 clause bsd": "BSD-3-Clause",
    "bsd 2 clause": "BSD-2-Clause", "simplified bsd": "BSD-2-Clause", "freebsd": "BSD-2-Clause",
    "bsd 2": "BSD-2-Clause", "2 clause bsd": "BSD-2-Clause",
    "mpl 2.0": "MPL-2.0", "mpl 2": "MPL-2.0", "mozilla public 2.0": "MPL-2.0",
    "odbl": "ODbL-1.0", "odbl 1.0": "ODbL-1.0", "open database": "ODbL-1.0",
    "open database 1.0": "ODbL-1.0", "odc by": "ODC-By-1.0", "odc by 1.0": "ODC-By-1.0",
    "pddl": "PDDL-1.0", "pddl 1.0": "PDDL-1.0", "unlicense": "Unlicense", "isc": "ISC",
    "cc0": "CC0-1.0", "cc0 1.0": "CC0-1.0", "cc0 1.0 universal": "CC0-1.0", "cc zero": "CC0-1.0",
    "creative commons zero": "CC0-1.0", "creative commons zero 1.0": "CC0-1.0",
    "public domain": "PDM", "publicdomain": "PDM", "public domain mark": "PDM",
    "public domain mark 1.0": "PDM", "pdm": "PDM",
}  # fmt: skip
# Words that say nothing about which licence: dropped before names are matched.
_FILLER = frozenset({"the", "license", "licence", "licensed", "version", "international",
                     "unported", "generic", "under", "a", "v", "legal", "code"})  # fmt: skip
_TOKEN = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?\+?")
_URL_START = re.compile(r"\A(?:[a-z][a-z0-9+.-]*:)?//|\A(?:www\.)?[a-z0-9-]+\.[a-z]")
_VERSION = re.compile(r"\A(\d)(?:\.(\d))?\Z")
_CC_ELEMENTS = {
    "by": "BY", "attribution": "BY", "sa": "SA", "sharealike": "SA", "nc": "NC",
    "noncommercial": "NC", "nd": "ND", "noderivatives": "ND", "noderivs": "ND",
}  # fmt: skip
_SPACED_ELEMENTS = (
    ("non commercial", "noncommercial"), ("share alike", "sharealike"),
    ("no derivatives", "noderivatives"), ("no derivs", "noderivs"),
)  # fmt: skip
_GNU_NAMES = (
    ("gnu affero general public license", "agpl"), ("affero general public license", "agpl"),
    ("gnu lesser general public license", "lgpl"), ("gnu library general public license", "lgpl"),
    ("lesser general public license", "lgpl"), ("gnu general public license", "gpl"),
    ("general public license", "gpl"), ("gnu free documentation license", "gfdl"),
    ("free documentation license", "gfdl"),
)  # fmt: skip
_GNU = re.compile(
    r"\b(agpl|lgpl|gpl|gfdl|fdl)\s*v?\s*(\d(?:\.\d)?)(\+|\s*or\s*later|\s*only)?(?![\d.])"
)


def spdx_id(value: object) -> str | None:
    """The SPDX identifier a licence name, tag or URL stands for; None when there is none.

    Example:
        >>> spdx_id("http://creativecommons.org/publicdomain/zero/1.0/")
        'CC0-1.0'
        >>> spdx_id("CC-BY-3.0-DE"), spdx_id("odbl")
        ('CC-BY-3.0-DE', 'ODbL-1.0')
    """
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or len(text) > 2000:
        return None
    lowered = text.lower()
    if lowered in KNOWN:
        return KNOWN[lowered]
    if "/" in lowered and _URL_START.match(lowered):
        found = _from_url(lowered)
        if found is not None:
            return found
    return _from_name(lowered)


def _from_url(url: str) -> str | None:
    if "//" not in url:
        url = "//" + url
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    host = (parts.hostname or "").removeprefix("www.")
    path = [part for part in parts.path.lower().split("/") if part]
    if host.endswith("creativecommons.org"):
        return _cc_url(path)
    if host.endswith("spdx.org") and len(path) >= 2 and path[0] == "licenses":
        return KNOWN.get(re.sub(r"\.(html|json|txt)\Z", "", path[1]))
    if not path:
        return None
    last = re.sub(r"\.(?:[a-z]{2}\.)?(html?|txt|php|md)\Z", "", path[-1])
    if host.endswith("gnu.org"):
        found = _GNU.search(last.replace("-", " "))
        return _gnu(found) if found else None
    if host.endswith("opensource.org"):
        return KNOWN.get(last) or NAMES.get(_words(last))
    if host.endswith("apache.org") and last in ("license-2.0", "license-2"):
        return "Apache-2.0"
    if host.endswith("mozilla.org") and "mpl" in path and "2.0" in path:
        return "MPL-2.0"
    if host.endswith("opendatacommons.org") and "licenses" in path:
        names = {"odbl": "ODbL-1.0", "by": "ODC-By-1.0", "odc-by": "ODC-By-1.0", "pddl": "PDDL-1.0"}
        return next((names[part] for part in path if part in names), None)
    return None


def _cc_url(path: list[str]) -> str | None:
    """`licenses/by-sa/4.0/[port/][deed.xx|legalcode]` and `publicdomain/zero|mark/1.0`."""
    if len(path) >= 3 and path[0] == "publicdomain":
        return {"zero": "CC0-1.0", "mark": "PDM"}.get(path[1]) if path[2] == "1.0" else None
    if len(path) < 3 or path[0] != "licenses":
        return None
    kind = _cc_kind(path[1].split("-"))
    version = path[2]
    port = None
    if len(path) > 3 and not path[3].startswith(("deed", "legalcode")):
        port = path[3].upper()
    return _cc(kind, version, port)


def _cc_kind(elements: list[str]) -> str | None:
    """`BY-NC-SA` from its elements in any order (`by-nd-nc` of version 1.0 included)."""
    found = {_CC_ELEMENTS.get(element) for element in elements} - {None}
    if "BY" not in found or ("SA" in found and "ND" in found):
        return None
    return "-".join(name for name in ("BY", "NC", "SA", "ND") if name in found)


def _cc(kind: str | None, version: str, port: str | None) -> str | None:
    if kind is None:
        return None
    if port is not None and (kind, version, port) in CC_PORTS:
        return f"CC-{kind}-{version}-{port}"
    return f"CC-{kind}-{version}" if version in CC_VERSIONS else None


def _gnu(found: re.Match) -> str | None:
    family = {"fdl": "GFDL"}.get(found.group(1), found.group(1).upper())
    version = found.group(2) if "." in found.group(2) else found.group(2) + ".0"
    if version not in GNU_VERSIONS[family]:
        return None
    later = (found.group(3) or "").strip()
    return f"{family}-{version}-{'or-later' if later in ('+', 'or later', 'orlater') else 'only'}"


def _words(text: str) -> str:
    """Lowercase words and versions, filler dropped: 'The MIT License' -> 'mit'."""
    tokens = _TOKEN.findall(text.replace("licence", "license"))
    # dict.fromkeys drops repeats in order: "The MIT License (MIT)" is "mit".
    return " ".join(dict.fromkeys(token for token in tokens if token not in _FILLER))


def _from_name(text: str) -> str | None:
    for long_name, short in _GNU_NAMES:
        text = text.replace(long_name, short)
    gnu = _GNU.search(re.sub(r"[-_]", " ", text))
    if gnu:
        return _gnu(gnu)
    words = _words(text.replace("-", " ").replace("_", " "))
    if words in NAMES:
        return NAMES[words]
    tokens = words.split()
    joined = " ".join(tokens)
    for before, after in _SPACED_ELEMENTS:
        joined = joined.replace(before, after)
    tokens = joined.split()
    if "cc" in tokens or "creative" in tokens or "attribution" in tokens:
        return _cc_name(tokens)
    if "apache" in tokens and ("2" in tokens or "2.0" in tokens):
        return "Apache-2.0"
    if "odbl" in tokens:
        return "ODbL-1.0"
    if ("mpl" in tokens or "mozilla" in tokens) and ("2" in tokens or "2.0" in tokens):
        return "MPL-2.0"
    return None


def _cc_name(tokens: list[str]) -> str | None:
    """`cc by sa 4.0`, `creative commons attribution sharealike 4.0 de`."""
    if "zero" in tokens or "cc0" in tokens:
        return "CC0-1.0"
    versions = [t for t in tokens if _VERSION.match(t)]
    if len(set(versions)) != 1:
        return None
    major, minor = _VERSION.match(versions[0]).groups()
    version = f"{major}.{minor or 0}"
    kind = _cc_kind([t for t in tokens if t in _CC_ELEMENTS])
    after = tokens[tokens.index(versions[0]) + 1 :]
    port = after[0].upper() if after and after[0].isalpha() and len(after[0]) <= 3 else None
    return _cc(kind, version, port)
