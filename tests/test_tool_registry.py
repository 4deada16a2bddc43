"""``run_tool``: services handed to the tools that need them, as_of fixed by the workflow,
oversized answers stored whole, the vendor recorded, and each vendor outcome where it belongs.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

import activities.tools
from shared.config import Settings
from shared.data.contracts import DataKind
from shared.errors import NoData, NotConfigured, RateLimited, VendorFailure
from shared.llm.contracts import ToolCall, ToolRequest
from shared.storage.buckets import PAYLOADS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore
from shared.tools.capping import MAX_CONTENT_CHARS
from shared.tools.registry import Tool, ToolServices, register_tool, run_tool, tool_specs
from tests.test_data_tools import AS_OF, FakeVendor, _walk, answer_of, call_tool, services_over


class FakeStore:
    """An object store in memory."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}

    def put_bytes(self, ref: ObjectRef, data: bytes) -> ObjectRef:
        self.objects[(ref.bucket, ref.key)] = data
        return ref


class _Nothing(BaseModel):
    """No arguments."""


def _services_seen(args: _Nothing, services: ToolServices) -> dict[str, Any]:
    return {"router_vendors": sorted(services.router.vendors)}


register_tool(
    Tool(
        name="probe_services",
        description="Says which vendors its services hold.",
        arguments=_Nothing,
        run=_services_seen,
        uses_services=True,
    )
)
register_tool(
    Tool(
        name="probe_plain",
        description="Needs no services.",
        arguments=_Nothing,
        run=lambda args: "plain answer",
    )
)


def _never_built() -> ToolServices:
    raise AssertionError("services were built for a call that needs none")


def _request(name: str, arguments: dict[str, Any], **context: Any) -> ToolRequest:
    return ToolRequest(call=ToolCall(id="c1", name=name, arguments=arguments), context=context)


def _long_history() -> FakeVendor:
    return FakeVendor(bars={"AAA": _walk("AAA", 500)})


# --- Services ----------------------------------------------------------------------------


def test_a_tool_that_uses_services_receives_them() -> None:
    result = run_tool(_request("probe_services", {}), services=lambda: services_over(FakeVendor()))

    assert result.ok, result.content
    assert json.loads(result.content) == {"router_vendors": ["fake"]}


def test_services_are_not_built_for_a_tool_that_needs_none() -> None:
    result = run_tool(_request("probe_plain", {}), services=_never_built)

    assert result.content == "plain answer"
    assert result.vendor is None


def test_a_data_tool_without_services_is_an_error_result() -> None:
    result = run_tool(_request("get_indices", {}, as_of=AS_OF.isoformat()))

    assert not result.ok
    assert "no data services" in result.content


# --- as_of belongs to the workflow ---------------------------------------------------------


def test_a_model_given_later_as_of_is_overridden_by_the_context() -> None:
    vendor = _long_history()
    later = (AS_OF + timedelta(days=365)).isoformat()

    answer = answer_of(
        call_tool("get_ohlcv", {"symbol": "AAA", "as_of": later}, services_over(vendor))
    )

    ((_, asked, _),) = vendor.reads
    assert asked["as_of"] == AS_OF
    assert answer["as_of"] == AS_OF.isoformat()


def test_a_context_without_as_of_is_refused_before_any_read() -> None:
    vendor = _long_history()

    result = run_tool(
        _request("get_ohlcv", {"symbol": "AAA", "as_of": AS_OF.isoformat()}),
        services=lambda: services_over(vendor),
    )

    assert not result.ok
    assert "`as_of`" in result.content and "context" in result.content
    assert vendor.reads == []


def test_as_of_is_hidden_from_the_schema_without_being_listed_as_fixed() -> None:
    (spec,) = tool_specs(["get_ohlcv"])

    assert "as_of" not in spec.parameters["properties"]
    assert spec.parameters["required"] == ["symbol"]


# --- Size cap ----------------------------------------------------------------------------


def _oversized(store: FakeStore, **context: Any) -> Any:
    services = ToolServices(router=services_over(_long_history()).router, store=store)
    return call_tool("get_ohlcv", {"symbol": "AAA", "lookback": 500}, services, context)


def test_an_oversized_answer_is_stored_whole_and_previewed() -> None:
    store = FakeStore()

    result = _oversized(store)

    assert result.ok
    assert len(result.content) <= MAX_CONTENT_CHARS
    assert result.full_result is not None
    ((bucket, key), stored) = next(iter(store.objects.items()))
    assert (bucket, key) == (PAYLOADS_BUCKET, result.full_result.key)
    assert key.startswith("tool-results/get_ohlcv/") and key.endswith(".json")
    full = json.loads(stored)
    assert len(full["data"]["rows"]) == 500
    summary = json.loads(result.content)
    assert summary["truncated"] is True
    assert summary["full_result"] == f"s3://{PAYLOADS_BUCKET}/{key}"
    rows = summary["preview"]["data"]["rows"]
    assert rows[0] == full["data"]["rows"][0] and rows[-1] == full["data"]["rows"][-1]
    assert any(isinstance(row, str) and "of 500 items left out" in row for row in rows)
    assert summary["preview"]["vendor"] == "fake"


def test_the_stored_key_is_the_same_for_the_same_call_and_differs_by_as_of() -> None:
    store = FakeStore()

    first = _oversized(store)
    again = _oversized(store)
    later = _oversized(store, as_of=(AS_OF + timedelta(days=1)).isoformat())

    assert first.full_result == again.full_result
    assert later.full_result is not None and later.full_result != first.full_result
    assert len(store.objects) == 2


def test_the_workflow_may_choose_where_full_answers_go() -> None:
    store = FakeStore()

    result = _oversized(store, result_key_prefix="runs/wf-1/run-2/market_analyst/")

    assert result.full_result is not None
    assert result.full_result.key.startswith("runs/wf-1/run-2/market_analyst/get_ohlcv/")


def test_an_oversized_answer_lands_in_real_s3(s3_settings: Settings) -> None:
    store = ObjectStore.from_settings(s3_settings)
    services = ToolServices(router=services_over(_long_history()).router, store=store)

    result = call_tool("get_ohlcv", {"symbol": "AAA", "lookback": 500}, services)

    assert result.full_result is not None
    assert len(json.loads(store.get_bytes(result.full_result))["data"]["rows"]) == 500


# --- Vendors and their outcomes ------------------------------------------------------------


def test_the_vendor_that_answered_is_recorded() -> None:
    empty = FakeVendor(name="local", errors={DataKind.INDICES: NoData("nothing here")})
    backup = FakeVendor(name="backup")

    result = call_tool("get_indices", {}, services_over(empty, backup))

    assert result.vendor == "backup"
    assert answer_of(result)["vendor"] == "backup"


def test_simulated_data_is_marked_in_the_content() -> None:
    sim = FakeVendor(name="sim")

    result = call_tool("get_indices", {}, services_over(sim))

    answer = answer_of(result)
    assert result.vendor == "sim"
    assert answer["simulated"] is True
    assert "SIMULATED" in answer["note"]


def test_no_data_is_an_answer_not_an_error() -> None:
    vendor = FakeVendor(errors={DataKind.NEWS: NoData("no articles")})

    result = call_tool("get_company_news", {"symbol": "AAA", "days": 3}, services_over(vendor))

    assert result.ok
    assert result.content.startswith(
        f"no news data for AAA in the window (3 days up to {AS_OF.isoformat()})"
    )
    assert "no articles" in result.content


def test_no_configured_vendor_is_an_error_result() -> None:
    unconfigured = FakeVendor(name="keyless", errors={DataKind.MACRO: NotConfigured("no key")})
    not_serving = FakeVendor(name="prices_only", kinds=frozenset({DataKind.OHLCV}))

    result = call_tool(
        "get_macro_series", {"series": "CPIAUCSL"}, services_over(unconfigured, not_serving)
    )

    assert not result.ok
    assert result.content.startswith("error: no vendor is configured for macro data")
    assert "no key" in result.content


@pytest.mark.parametrize("error", [RateLimited("slow down"), VendorFailure("HTTP 502")])
def test_a_throttled_or_failing_vendor_raises_for_a_retry(error: Exception) -> None:
    vendor = FakeVendor(errors={DataKind.MOVERS: error})

    with pytest.raises(type(error)):
        call_tool("get_market_movers", {}, services_over(vendor))


def test_the_activity_retries_a_rate_limited_read(monkeypatch: pytest.MonkeyPatch) -> None:
    limited = RateLimited("slow down", retry_after=timedelta(seconds=30))
    services = services_over(FakeVendor(errors={DataKind.SECTORS: limited}))
    monkeypatch.setattr(activities.tools, "tool_services", lambda: services)

    with pytest.raises(ApplicationError) as caught:
        activities.tools.run_tool_activity(
            _request("get_sector_performance", {}, as_of=AS_OF.isoformat())
        )

    assert caught.value.type == "RateLimited"
    assert not caught.value.non_retryable
    assert caught.value.next_retry_delay == timedelta(seconds=30)
