"""The PromQL the project ships (the Grafana dashboard and the PrometheusRule), and the check
that each expression names only series a scrape of the running controller has.

The end-to-end tests that already run a controller call ``check_scrape`` with the group of
expressions whose series their controller has: the pools test (one replica, Proxies on two
providers, a pool) every expression of no group below, the provider-health test (the health
monitor on) those naming its gauges, the shards test (``--shards``) those naming shard series;
``test_monitoring.py`` proves every group is non-empty, so the three together check them all.
"""

from __future__ import annotations

import json
import os
import re

import yaml

from . import promql, promtool

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "controller", "config")
DASHBOARD = os.path.join(CONFIG, "grafana", "egress-proxies-controller.json")
RULE = os.path.join(CONFIG, "prometheus-rules", "prometheus_rule.yaml")
# Series only some controllers export: the end-to-end test whose controller does checks them.
GROUPS = {
    "shards": ("egress_proxies_shard_held", "egress_proxies_shard_handovers_total"),
    "provider-health": ("egress_proxies_provider_ready", "egress_proxies_provider_target_ready"),
}
LABEL_VALUES = re.compile(r"^label_values\((?P<metric>[^,]+),\s*(?P<label>[A-Za-z_][A-Za-z0-9_]*)\)$")


def dashboard() -> dict:
    with open(DASHBOARD, encoding="utf-8") as handle:
        return json.load(handle)


def rule() -> dict:
    with open(RULE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def panels(dash: dict) -> list:
    out = []
    for panel in dash["panels"]:
        out.append(panel)
        out.extend(panel.get("panels") or [])  # a collapsed row's own
    return out


def expressions() -> list:
    """(where, PromQL) of every query: panel targets, variable queries (``label_values(m, l)``
    becomes ``m`` grouped by ``l``) and alert expressions."""
    dash = dashboard()
    out = [
        ("panel %r %s" % (p["title"], t["refId"]), t["expr"])
        for p in panels(dash)
        for t in p.get("targets") or []
    ]
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            m = LABEL_VALUES.match(query)
            assert m, "variable %s: only label_values(metric, label) is checked: %r" % (var["name"], query)
            out.append(("variable %s" % var["name"], "count by (%s) (%s)" % (m["label"], m["metric"])))
    for group in rule()["spec"]["groups"]:
        for item in group["rules"]:
            out.append(("alert %s" % (item.get("alert") or item.get("record")), item["expr"]))
    return out


def group_of(expr: str) -> str:
    """The GROUPS key whose series ``expr`` names ("" for none)."""
    metrics = {metric for metric, _labels in promql.parse(expr).selectors}
    named = [group for group, series in GROUPS.items() if metrics & set(series)]
    assert len(named) <= 1, "%r names series of %s: no scrape has them all" % (expr, named)
    return named[0] if named else ""


def check_scrape(text: str, group: str) -> int:
    """``promtool check metrics`` finds nothing to say about ``text``, and every expression of
    ``group`` (see GROUPS; "" for the rest) names only metrics and labels ``text`` has; answers
    how many expressions were checked."""
    promtool.check_metrics(text)
    scraped = promql.scrape_labels(text)
    chosen = [(where, expr) for where, expr in expressions() if group_of(expr) == group]
    problems = [
        "%s: %s" % (where, ", ".join(p))
        for where, expr in chosen
        if (p := promql.unknown_names(expr, scraped))
    ]
    assert not problems, "\n".join(problems)
    return len(chosen)
