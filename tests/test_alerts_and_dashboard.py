"""The alert rules (promtool's own unit tests) and the Grafana dashboard's queries.

Every metric a rule or a panel names must be one the desk exports: one of ours
(``shared.observability.metrics.METRICS``), one of the SDK's it relies on (``SDK_METRICS``,
checked against a real worker's endpoint in ``tests/test_metrics.py``), or Prometheus' ``up``.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml

from shared.observability.metrics import METRICS, SDK_METRICS
from tests.prometheus import debian_binary, promtool

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "alerts_test.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "quantdesk.json"
_NAME = re.compile(r"\b((?:temporal|quantdesk|gen_ai)_[a-z0-9_]+|up)\b(?!\s*\()")
_HISTOGRAM_PARTS = ("_bucket", "_sum", "_count")


def _known() -> set[str]:
    ours = {metric.exported for metric in METRICS}
    histograms = {m.exported for m in METRICS if m.kind != "counter"}
    histograms |= {"temporal_workflow_task_schedule_to_start_latency"}
    histograms |= {"temporal_activity_schedule_to_start_latency"}
    parts = {f"{name}{part}" for name in histograms for part in _HISTOGRAM_PARTS}
    return ours | set(SDK_METRICS) | parts | {"up"}


def _names(expr: str) -> set[str]:
    """The metric names an expression reads (label names and functions left out)."""
    without_labels = re.sub(r"\{[^}]*\}", "", expr)
    without_by = re.sub(r"\b(?:by|without)\s*\([^)]*\)", "", without_labels)
    return set(_NAME.findall(without_by))


def rule_expressions() -> dict[str, str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"]: rule["expr"] for group in groups for rule in group["rules"]}


def dashboard_expressions() -> dict[str, str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return {
        panel["title"]: target["expr"] for panel in panels for target in panel.get("targets", [])
    }


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], capture_output=True, text=True, cwd=RULES.parent)


def test_the_rules_are_valid_and_their_unit_tests_pass() -> None:
    checked = _promtool("check", "rules", str(RULES))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = _promtool("test", "rules", str(RULE_TESTS))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_every_rule_has_a_unit_test() -> None:
    tested = set(re.findall(r"alertname: (\w+)", RULE_TESTS.read_text()))
    assert tested == set(rule_expressions())


def test_rules_and_panels_name_only_metrics_the_desk_exports() -> None:
    known = _known()
    for title, expr in {**rule_expressions(), **dashboard_expressions()}.items():
        names = _names(expr)
        assert names, f"{title}: reads no metric"
        assert names <= known, f"{title}: unknown {sorted(names - known)}"


def test_the_dashboard_covers_what_an_operator_watches() -> None:
    read = set().union(*(_names(expr) for expr in dashboard_expressions().values()))
    for needed in (
        "temporal_num_pollers",
        "temporal_workflow_task_execution_failed_total",
        "quantdesk_model_calls_total",
        "gen_ai_client_token_usage_sum",
        "quantdesk_model_cost_microusd_total",
        "quantdesk_tool_calls_total",
        "quantdesk_decisions_total",
        "quantdesk_orders_total",
        "quantdesk_person_wait_marks_total",
        "quantdesk_spend_limit_used_ratio",
    ):
        assert needed in read, needed


def test_compose_scrapes_every_worker_service_and_loads_the_rules(tmp_path: Path) -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    config_path = ROOT / "deploy" / "prometheus" / "prometheus-compose.yml"
    config = yaml.safe_load(config_path.read_text())
    scraped = {
        name
        for job in config["scrape_configs"]
        for sd in job.get("dns_sd_configs", [])
        for name in sd["names"]
    }
    workers = {name for name in compose["services"] if name.startswith("worker-")}
    assert workers <= scraped
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]
    mounts = compose["services"]["prometheus"]["volumes"]
    assert "./deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro" in mounts
    # promtool checks it as the container reads it: the rules at the path it mounts them.
    local = tmp_path / "prometheus.yml"
    local.write_text(config_path.read_text().replace("/etc/prometheus/alerts.yml", str(RULES)))
    checked = _promtool("check", "config", str(local))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_compose_provisions_grafana_with_the_dashboard_and_alertmanager_with_a_route() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    grafana = compose["services"]["grafana"]["volumes"]
    assert (
        "./deploy/grafana/quantdesk.json:/var/lib/grafana/dashboards/quantdesk.json:ro" in grafana
    )
    provider = yaml.safe_load(
        (ROOT / "deploy" / "grafana" / "provisioning" / "dashboards" / "quantdesk.yml").read_text()
    )
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    amtool = debian_binary("amtool")
    config = ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
    checked = subprocess.run([amtool, "check-config", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_metric_and_rule_is_documented() -> None:
    doc = (ROOT / "docs" / "monitoring.md").read_text()
    for metric in METRICS:
        assert f"`{metric.exported}`" in doc, metric.exported
    for alert in rule_expressions():
        assert f"`{alert}`" in doc, alert
