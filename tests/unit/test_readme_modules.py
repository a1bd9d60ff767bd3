"""The README names exactly the modules the collection ships, and says how many there are (it
once said four and listed five)."""

from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def test_the_readme_lists_and_counts_the_shipped_modules():
    shipped = sorted(
        f[:-3]
        for f in os.listdir(os.path.join(ROOT, "plugins", "modules"))
        if f.endswith(".py") and f != "__init__.py"
    )
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        readme = handle.read()
    table = re.findall(r"^\| `crawl\.egress_proxies\.(\w+)` \|", readme, re.M)
    assert sorted(table) == shipped
    count = NUMBERS[len(shipped)]
    assert "exposed as %s\nidempotent provider modules" % count in readme
    assert "the %s provider modules" % count in readme
    assert "docs/modules.md: the %s modules" % count in readme
