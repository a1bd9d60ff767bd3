"""The PrometheusRule as Prometheus judges it (issue 41, point 6): ``promtool check rules`` on its
groups, and ``promtool test rules`` on prometheus_rule_test.yaml, which must hold, for every
alert of the rule, a case where it fires and one where it stays silent. (``promtool check
metrics`` runs on the scrapes of the end-to-end tests: monitoring_lib.check_scrape,
test_e2e_logs.py.)"""

from __future__ import annotations

import shutil

import yaml

from . import monitoring_lib, promtool


def groups() -> list:
    """The shipped PrometheusRule's rule groups (spec.groups), as Prometheus reads them."""
    return monitoring_lib.rule()["spec"]["groups"]


def alerts() -> set:
    return {r["alert"] for g in groups() for r in g["rules"] if "alert" in r}


def test_the_rule_groups_pass_promtool_check_rules(tmp_path):
    rules = promtool.write_rule_groups(str(tmp_path), groups())
    said = promtool.run("check", "rules", rules)
    assert "SUCCESS: %d rules found" % len(alerts()) in said, said


def test_every_alert_has_a_firing_and_a_silent_unit_test():
    with open(promtool.RULE_TESTS, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    cases = [case for test in doc["tests"] for case in test.get("alert_rule_test") or []]
    fires = {c["alertname"] for c in cases if c.get("exp_alerts")}
    silent = {c["alertname"] for c in cases if not c.get("exp_alerts")}
    assert alerts() - fires == set(), "alerts without a case where they fire"
    assert alerts() - silent == set(), "alerts without a case where they stay silent"
    assert fires | silent <= alerts(), "cases of alerts the rule no longer has"


def test_promtool_test_rules_passes(tmp_path):
    promtool.write_rule_groups(str(tmp_path), groups())
    shutil.copy(promtool.RULE_TESTS, tmp_path)
    said = promtool.run("test", "rules", "prometheus_rule_test.yaml", cwd=str(tmp_path))
    assert "SUCCESS" in said, said


def test_promtool_test_rules_catches_an_alert_that_no_longer_fires(tmp_path):
    """The unit tests have teeth: a threshold raised past the firing case fails them."""
    path = promtool.write_rule_groups(str(tmp_path), groups())
    with open(path, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    for rule in doc["groups"][0]["rules"]:
        if rule.get("alert") == "EgressProxiesNotReadyForLong":
            rule["expr"] = rule["expr"].replace("> 1800", "> 86400")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(doc, handle)
    shutil.copy(promtool.RULE_TESTS, tmp_path)
    try:
        promtool.run("test", "rules", "prometheus_rule_test.yaml", cwd=str(tmp_path))
    except AssertionError as exc:
        assert "EgressProxiesNotReadyForLong" in str(exc)
    else:
        raise AssertionError("promtool test rules passed a rule that no longer fires")


def test_promtool_check_metrics_refuses_a_gauge_named_like_a_counter():
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    registry = CollectorRegistry()
    Gauge("x_seconds_total", "A gauge named like a counter.", registry=registry).set(1)
    try:
        promtool.check_metrics(generate_latest(registry).decode())
    except AssertionError as exc:
        assert "x_seconds_total" in str(exc)
    else:
        raise AssertionError("promtool check metrics passed a gauge named x_seconds_total")
