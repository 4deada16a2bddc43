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
from tests.prometheus import promtool

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
