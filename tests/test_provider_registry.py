"""A provider is one row of ``PROVIDERS``: its settings block, its worker's limits, its wire
dialect and its prices all follow from the row.

The settings tests hold ``Settings`` and the registry in sync; the extra-row test adds a
provider nobody else knows, in a fresh interpreter, and drives it through settings,
worker plan and chat activity against the strict wire fake; the gemini tests show a row
added that way speaks the OpenAI wire at Google's own path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from temporalio.testing import ActivityEnvironment

from activities.llm import LlmActivities
from shared.config import (
    LangChainSettings,
    ProviderSettings,
    Settings,
    load_settings,
    settings_block_of,
)
from shared.llm.clients import complete
from shared.llm.contracts import ChatMessage, ChatRequest, LlmChoice
from shared.llm.pricing import ModelPrice
from shared.llm.providers import PROVIDERS, LlmRole, Serving, provider_spec, row
from shared.storage.objects import ObjectRef
from tests.fakes.llm_server import FakeLlmServer
from workers.main import plan_for
from workers.roles import WorkerRole
from workflows.quantagent import ChartReader

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-test-ROW-SECRET-31337"
LIMITS = set(Serving.model_fields)
NOTE = {
    "stance": "bullish",
    "confidence": 0.7,
    "key_points": ["closes rose 8%"],
    "summary": "Momentum is up.",
}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


@pytest.fixture
def fake() -> Iterator[FakeLlmServer]:
    with FakeLlmServer() as server:
        yield server


def _limits(block: ProviderSettings) -> Serving:
    return Serving(**block.model_dump(include=LIMITS))


# -- Settings and the registry stay in sync -------------------------------------------------


def test_every_row_has_a_settings_block_and_every_block_a_row() -> None:
    blocks = {
        name: field.annotation
        for name, field in Settings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, ProviderSettings)
    }

    assert blocks == {name: settings_block_of(spec) for name, spec in PROVIDERS.items()}
    assert blocks["langchain"] is LangChainSettings  # its class and arguments too
    assert set(PROVIDERS).isdisjoint(Settings.__annotations__)  # none written by hand


def test_every_block_default_comes_from_its_row() -> None:
    for name, spec in PROVIDERS.items():
        default = Settings.model_fields[name].default

        assert _limits(default) == spec.serving, name
        # the rest falls back to the row and the vendor's variables at use
        rest = default.model_dump(exclude=LIMITS)
        assert rest.pop("arguments", {}) == {}, name  # a langchain row's: none until set
        assert set(rest.values()) == {None}, name


def test_no_model_is_priced_twice_at_different_prices() -> None:
    seen: dict[str, ModelPrice] = {}
    for spec in PROVIDERS.values():
        for model, price in spec.prices.items():
            assert seen.setdefault(model, price) == price, model


def test_a_row_needing_a_key_must_name_the_variable_that_holds_it() -> None:
    with pytest.raises(ValidationError, match="requires a key but names no key_env"):
        row("acme", ("acme-quick", "acme-deep", None))


@pytest.mark.parametrize("name", sorted(PROVIDERS))
def test_a_providers_variables_reach_its_block_which_keeps_its_row_limits(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = PROVIDERS[name]
    prefix = f"QUANTDESK_{name.upper()}__"
    monkeypatch.setenv(f"{prefix}BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv(f"{prefix}API_KEY", KEY)
    monkeypatch.setenv(f"{prefix}CONTEXT_TOKENS", "2048")
    monkeypatch.setenv(f"{prefix}QUICK_MODEL", "quick-of-the-test")

    settings = load_settings()

    assert settings.base_url(spec) == "http://127.0.0.1:9/v1"
    assert settings.api_key(spec) == KEY
    assert settings.context_window(spec) == (2048, f"{prefix}CONTEXT_TOKENS")
    assert settings.model_for(spec, LlmRole.QUICK) == "quick-of-the-test"
    assert _limits(settings.provider(name)) == spec.serving


def test_a_limit_set_in_a_dotenv_file_overrides_the_rows(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "QUANTDESK_LMSTUDIO__TIMEOUT_SECONDS=45\nQUANTDESK_OLLAMA__MAX_CONCURRENT=4\n"
    )

    settings = Settings(_env_file=dotenv)

    assert settings.provider("ollama").max_concurrent == 4
    lmstudio = settings.provider("lmstudio")
    assert (lmstudio.timeout_seconds, lmstudio.max_concurrent) == (45, 2)


def test_the_compatible_worker_takes_every_rows_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTDESK_QWEN__REQUESTS_PER_SECOND", "0.25")

    plan = plan_for(WorkerRole.LLM_OPENAI_COMPATIBLE, load_settings())

    assert plan.queue_rate == 0.25
    assert plan.max_concurrent == min(
        spec.serving.max_concurrent for spec in PROVIDERS.values() if spec.task_queue == plan.queue
    )


# -- a row alone is a provider ---------------------------------------------------------------


def test_a_row_alone_is_a_provider_from_settings_to_the_wire(
    fake: FakeLlmServer, tmp_path: Path
) -> None:
    fake.reply_json(NOTE)
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("QUANTDESK_", "ACME_"))
    }
    env |= {
        "PYTHONPATH": str(ROOT),
        "ACME_API_KEY": KEY,
        "QUANTDESK_ACME__BASE_URL": fake.base_url_openai,
        "QUANTDESK_ACME__TIMEOUT_SECONDS": "30",
    }

    probe = subprocess.run(
        [sys.executable, "-m", "tests.extra_provider_row"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert probe.returncode == 0, probe.stderr
    seen = json.loads(probe.stdout)
    assert seen["block"]["base_url"] == fake.base_url_openai
    assert seen["block"]["timeout_seconds"] == 30
    assert (seen["block"]["max_concurrent"], seen["block"]["requests_per_second"]) == (3, 0.5)
    assert seen["plan"] == {"queue": "llm-openai-compatible", "queue_rate": 0.5}
    assert (seen["structured"], seen["model"]) == (NOTE, "acme-quick")
    assert seen["cost_usd"] == pytest.approx((11 * 1.0 + 7 * 2.0) / 1_000_000)
    assert "ACME_API_KEY" in seen["without_key"]
    [sent] = fake.requests  # the keyless chat was refused before any call
    assert (sent.body["model"], sent.api_key) == ("acme-quick", KEY)
    assert sent.body["response_format"]["type"] == "json_schema"
    assert sent.body["response_format"]["json_schema"]["strict"] is True
    assert KEY not in probe.stdout + probe.stderr


# -- gemini, added as a row ------------------------------------------------------------------


def test_gemini_is_selectable_and_reads_charts_as_images() -> None:
    spec = provider_spec("gemini")

    assert load_settings(default_provider="gemini").default_provider == "gemini"
    assert spec.key_env == "GEMINI_API_KEY"
    assert ChartReader.of(spec, LlmChoice(provider="gemini")).input == "image"


async def test_gemini_chat_goes_to_googles_openai_path_with_a_strict_schema(
    fake: FakeLlmServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("QUANTDESK_GEMINI__BASE_URL", f"http://127.0.0.1:{fake.port}/v1beta/openai/")
    fake.reply_json(NOTE)
    request = ChatRequest(
        agent="test_agent",
        provider="gemini",
        messages=[ChatMessage(role="user", content="Assess ACME.")],
        response_schema="AnalystNote",
        max_tokens=300,
    )

    response = await ActivityEnvironment().run(
        LlmActivities(load_settings(), "llm-openai-compatible").chat, request
    )

    sent = fake.last_request
    assert (sent.path, sent.api_key) == ("/v1beta/openai/chat/completions", KEY)
    assert sent.body["model"] == "gemini-2.5-flash"
    assert sent.body["max_tokens"] == 300
    assert sent.body["response_format"]["json_schema"]["strict"] is True
    assert response.structured == NOTE
    assert response.usage.cost_usd == pytest.approx((11 * 0.30 + 7 * 2.50) / 1_000_000)


async def test_gemini_gets_charts_as_data_urls(fake: FakeLlmServer) -> None:
    spec = PROVIDERS["gemini"]
    chart = ObjectRef(bucket="charts", key="run-1/chart.png", content_type="image/png")
    fake.reply_text("a head and shoulders")

    response = await complete(
        ChatRequest(
            agent="pattern_agent",
            provider="gemini",
            role=LlmRole.VISION,
            messages=[ChatMessage(role="user", content="Which pattern?", images=[chart])],
        ),
        spec=spec,
        model="gemini-2.5-flash",
        api_key=KEY,
        base_url=f"http://127.0.0.1:{fake.port}/v1beta/openai/",
        timeout=5.0,
        images={chart.key: PNG},
    )

    [_, image] = fake.last_request.body["messages"][0]["content"]
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    assert response.text == "a head and shoulders"
