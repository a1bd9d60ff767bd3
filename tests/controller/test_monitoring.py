"""The shipped Grafana dashboard and PrometheusRule (issue 29, point 6): every query is PromQL
(promql.py finds the names each one uses; promtool judges the rule in test_promtool.py), names
the series operators need, and the end-to-end scrapes (monitoring_lib.check_scrape, from
test_e2e_pools.py and test_e2e_shards.py; promtool checks each scrape) between them check every
expression's names; the parser and the name check refuse what they must;
the rule passes the Prometheus Operator's schema on the test API server."""

from __future__ import annotations

import os
import re

import pytest
import yaml
from egress_proxies_controller.telemetry import metrics as metrics_mod
from kubernetes.dynamic import DynamicClient

from . import e2e_lib, kustomize_render, monitoring_lib, promql, test_kustomize

DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")


def test_every_query_and_alert_parses_as_promql():
    exprs = monitoring_lib.expressions()
    assert len(exprs) >= 30
    for where, expr in exprs:
        names = promql.parse(expr)
        assert names.selectors, "%s names no metric: %r" % (where, expr)


def test_the_end_to_end_scrapes_between_them_check_every_expression():
    """Each expression belongs to exactly one group, and each group, checked by one end-to-end
    test's scrape, has expressions to check."""
    groups = [monitoring_lib.group_of(expr) for _where, expr in monitoring_lib.expressions()]
    assert set(groups) == {"", *monitoring_lib.GROUPS}


@pytest.mark.parametrize(
    "expr",
    [
        "sum(rate(x[5m])",  # unbalanced
        "sum by (a b) (x)",
        'x{a="1",}}',
        "x{a=1}",  # a matcher value is a string
        'x{a~"1"}',
        "rate(x[5 minutes])",
        "frobnicate(x)",  # no such function
        "x >",
        "x + bool y",  # bool only after a comparison
        "x y",
        '{a="b"}',  # no metric name
        "x offset",
    ],
)
def test_the_parser_refuses_what_promql_refuses(expr):
    with pytest.raises(promql.PromQLError):
        promql.parse(expr)


def test_the_parser_names_metrics_matchers_and_grouping_labels():
    names = promql.parse(
        "histogram_quantile(0.99, sum by (le, op)"
        ' (rate(a_bucket{provider=~"$provider", op!=""}[$__rate_interval])))'
        " / on (op) group_left (kind) sum without (x) (b offset 5m) > bool 1 or -vector(0)"
        " unless max_over_time(c[30m:1m]) # a comment"
    )
    assert names.selectors == [
        ("a_bucket", frozenset({"provider", "op"})),
        ("b", frozenset()),
        ("c", frozenset()),
    ]
    assert names.grouping == {"le", "op", "kind", "x"}


def test_the_name_check_fails_on_a_metric_or_label_the_scrape_lacks():
    scraped = promql.scrape_labels(metrics_mod.Metrics().render().decode())
    assert "controller_runtime_reconcile_time_seconds_bucket" not in scraped  # no reconcile yet
    m = metrics_mod.Metrics()
    m.reconciled("success", 0.2)
    scraped = promql.scrape_labels(m.render().decode())
    good = (
        "histogram_quantile(0.9, sum by (le)"
        ' (rate(controller_runtime_reconcile_time_seconds_bucket{controller="proxy"}[5m])))'
    )
    assert promql.unknown_names(good, scraped) == []
    assert promql.unknown_names("egress_proxies_leadr", scraped) == ["metric egress_proxies_leadr"]
    assert promql.unknown_names('egress_proxies_leader{pod="x"}', scraped) == [
        "label pod of egress_proxies_leader"
    ]
    assert promql.unknown_names("sum by (provider) (egress_proxies_leader)", scraped) == [
        "grouping label provider"
    ]
    assert promql.unknown_names("controller_runtime_reconcile_time_seconds_sum", scraped) == []


def test_the_dashboard_has_a_panel_for_each_thing_operators_look_at():
    dash = monitoring_lib.dashboard()
    panels = monitoring_lib.panels(dash)
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["description"] and panel["datasource"] == {
                "type": "prometheus",
                "uid": "${datasource}",
            }
    queries = {p["title"]: " ".join(t["expr"] for t in p.get("targets") or []) for p in panels}
    wanted = {
        "Proxies by provider and Ready": "egress_proxies_proxies{",
        "Not-Ready Proxies by provider and reason": "max by (provider, reason) (egress_proxies_proxies{",
        "Reconcile latency": "controller_runtime_reconcile_time_seconds_bucket",
        "Runner run latency": "egress_proxies_runner_run_duration_seconds_bucket",
        "Provider call errors by class": "sum by (provider, class) (rate(egress_proxies_provider_operations",
        "Pool readiness": "egress_proxies_pool_ready_replicas",
        "Rotation progress": "egress_proxies_pool_updated_replicas",
        "Leader": "egress_proxies_leader",
        "Shard ownership": "egress_proxies_shard_held",
    }
    for title, needle in wanted.items():
        assert needle in queries[title], title
    (datasource,) = [v for v in dash["templating"]["list"] if v["type"] == "datasource"]
    assert datasource["query"] == "prometheus"


def test_the_rule_alerts_on_what_issue_29_names_and_is_an_optional_component():
    doc = monitoring_lib.rule()
    assert (doc["apiVersion"], doc["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    rules = {r["alert"]: r for g in doc["spec"]["groups"] for r in g["rules"]}
    assert {
        "EgressProxiesNotReadyForLong",
        "EgressProxiesProviderUnhealthy",
        "EgressProxiesReconcileErrorsRising",
        "EgressProxiesNoLeader",
        "EgressProxiesPoolBelowFloor",
    } <= set(rules)
    for name, item in rules.items():
        assert DURATION.match(item["for"]), name
        assert item["labels"]["severity"] in ("warning", "critical"), name
        assert item["annotations"]["summary"] and item["annotations"]["description"], name
    component = os.path.join(monitoring_lib.CONFIG, "prometheus-rules")
    assert [(o["kind"], o["metadata"]["name"]) for o in kustomize_render.render(component)] == [
        ("PrometheusRule", "egress-proxies-controller")
    ]
    for overlay in ("default", "with-kubernetes-provider"):  # the CRD may be absent: never by default
        kinds = {o["kind"] for o in kustomize_render.render(os.path.join(monitoring_lib.CONFIG, overlay))}
        assert "PrometheusRule" not in kinds, overlay


PROMETHEUS_RULE_CRD = os.path.join(
    os.path.dirname(__file__), "crds", "prometheusrules.monitoring.coreos.com.yaml"
)


def test_the_rule_passes_the_prometheus_operator_schema(kube_admin):
    """The component's PrometheusRule, rendered, is stored unpruned by a server-side dry run
    against the Prometheus Operator's CRD (tests/controller/crds/), which refuses a bad ``for``
    and a rule without ``expr``."""
    with open(PROMETHEUS_RULE_CRD, encoding="utf-8") as handle:
        crd = yaml.safe_load(handle)
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": e2e_lib.CONTROLLER_NS}}
    e2e_lib.apply_all(kube_admin, [crd, namespace])  # both kept: installing them twice is harmless
    dynamic = DynamicClient(kube_admin)
    (rule,) = kustomize_render.render(os.path.join(monitoring_lib.CONFIG, "prometheus-rules"))
    stored = test_kustomize.dry_run_apply(dynamic, rule)
    assert stored["spec"] == rule["spec"]  # nothing pruned: every field is one the schema has
    bad = yaml.safe_load(yaml.safe_dump(rule))
    bad["spec"]["groups"][0]["rules"][0]["for"] = "5 minutes"
    with pytest.raises(Exception, match="for"):
        test_kustomize.dry_run_apply(dynamic, bad)
    del bad["spec"]["groups"][0]["rules"][0]["expr"]
    bad["spec"]["groups"][0]["rules"][0]["for"] = "5m"
    with pytest.raises(Exception, match="expr"):
        test_kustomize.dry_run_apply(dynamic, bad)


# Grafana's unit ids the dashboard uses (a typo would show raw numbers without a word).
GRAFANA_UNITS = {"s", "ops", "percentunit", "short", "bool_yes_no"}


def test_every_dashboard_panel_and_override_has_a_unit():
    """A number without a unit misleads (seconds read as counts): every panel that draws data
    says its unit, and a target with another unit than the panel's has an override saying so."""
    for panel in monitoring_lib.panels(monitoring_lib.dashboard()):
        if panel["type"] == "row":
            continue
        field = panel.get("fieldConfig") or {}
        unit = (field.get("defaults") or {}).get("unit")
        assert unit in GRAFANA_UNITS, "panel %r: unit %r" % (panel["title"], unit)
        refs = {t["refId"] for t in panel["targets"]}
        for override in field.get("overrides") or []:
            assert override["matcher"] == {"id": "byFrameRefID", "options": override["matcher"]["options"]}
            assert override["matcher"]["options"] in refs, panel["title"]
            assert [p["id"] for p in override["properties"]] == ["unit"], panel["title"]
            assert override["properties"][0]["value"] in GRAFANA_UNITS, panel["title"]
