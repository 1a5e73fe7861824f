"""TDMRep's `/.well-known/tdmrep.json`, given as data: which paths of a site reserve text and
data mining rights.

The file is a JSON list of rules `{"location": "/images/*", "tdm-reservation": 1,
"tdm-policy": "https://..."}`. A location is a path pattern: `*` matches any characters, a
final `$` anchors it at the end of the path, and otherwise it matches every path that
starts with it (`/` covers the whole site). Rules are read in file order and the first
whose location matches a URL's path applies; `tdm-reservation: 0` says rights are not
reserved there.

Example:
    >>> rules = parse_rules([{"location": "/news/*", "tdm-reservation": 1}], "tdmrep.json")
    >>> reservation(rules, "/news/2024/a.html"), reservation(rules, "/about")
    (TdmRule(location='/news/*', reserved=True, policy=None), None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mixplane.errors import ConfigError


@dataclass(frozen=True)
class TdmRule:
    """One rule of a tdmrep.json file."""

    location: str
    reserved: bool
    policy: str | None
    pattern: re.Pattern = field(repr=False, compare=False, default=re.compile(""))


def location_pattern(location: str) -> re.Pattern:
    """The regular expression a TDMRep location stands for.

    Example:
        >>> bool(location_pattern("/a/*.pdf$").match("/a/b/c.pdf"))
        True
    """
    anchored = location.endswith("$")
    body = location[:-1] if anchored else location
    regex = ".*".join(re.escape(part) for part in body.split("*"))
    return re.compile(regex + ("\\Z" if anchored else ""))


def parse_rules(data: Any, where: str) -> list[TdmRule]:
    """The rules of a parsed tdmrep.json; a ConfigError naming `where` and the rule when the
    file is not in TDMRep's form."""
    if not isinstance(data, list):
        raise ConfigError(f"{where}: a tdmrep.json file is a JSON list of rules")
    rules = []
    for index, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("location"), str):
            raise ConfigError(f"{where}: rule {index} has no 'location' string")
        flag = item.get("tdm-reservation")
        if flag not in (0, 1, "0", "1"):
            raise ConfigError(
                f"{where}: rule {index} ({item['location']!r}): 'tdm-reservation' must be 0 or "
                f"1, got {flag!r}"
            )
        policy = item.get("tdm-policy")
        location = item["location"]
        rules.append(
            TdmRule(
                location,
                str(flag) == "1",
                policy if isinstance(policy, str) else None,
                location_pattern(location if location.startswith("/") else "/" + location),
            )
        )
    return rules


def reservation(rules: list[TdmRule], path: str) -> TdmRule | None:
    """The first rule whose location matches `path` (with its query), or None."""
    for rule in rules:
        if rule.pattern.match(path):
            return rule
    return None
