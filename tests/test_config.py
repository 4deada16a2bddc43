"""Settings: variables as users type them, vendor fallbacks, and clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli.stack.console import console_server
from cli.stack.servers import s3_server, temporal_dev_server
from shared.config import Settings, load_settings
from shared.errors import ConfigError
from shared.llm.providers import PROVIDERS, LlmRole
from workers.roles import WorkerRole, serving_roles, unanswered


def test_nested_variables_configure_a_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTDESK_OPENAI__QUICK_MODEL", "gpt-test-mini")
    monkeypatch.setenv("QUANTDESK_OPENAI__REQUESTS_PER_SECOND", "2.5")

    settings = load_settings()

    assert settings.model_for(PROVIDERS["openai"], LlmRole.QUICK) == "gpt-test-mini"
    assert settings.provider("openai").requests_per_second == 2.5


def test_registry_default_model_applies_when_unset() -> None:
    settings = load_settings()

    assert settings.model_for(PROVIDERS["anthropic"], LlmRole.DEEP) == "claude-sonnet-4-5"


def test_vendor_variables_are_the_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", "dash-key")
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://gpu-box:11434/v1")

    settings = load_settings()

    assert settings.api_key(PROVIDERS["qwen"]) == "dash-key"
    assert settings.base_url(PROVIDERS["ollama"]) == "http://gpu-box:11434/v1"


def test_quantdesk_key_wins_over_the_vendor_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "vendor")
    monkeypatch.setenv("QUANTDESK_OPENAI__API_KEY", "ours")

    assert load_settings().api_key(PROVIDERS["openai"]) == "ours"


def test_keys_never_show_in_the_settings_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTDESK_ANTHROPIC__API_KEY", "sk-ant-very-secret")

    settings = load_settings()

    assert "sk-ant-very-secret" not in repr(settings)
    assert "sk-ant-very-secret" not in settings.model_dump_json()


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("QUANTDESK_DEFAULT_PROVIDER", "chatgpt", "openai, anthropic, qwen"),
        ("QUANTDESK_S3__ENDPOINT", "http://minio:9000", "without http://"),
        ("QUANTDESK_OPENAI__MAX_CONCURRENT", "0", "greater than or equal to 1"),
        ("QUANTDESK_TEMPORAL__UI_PORT", "99999", "less than or equal to 65535"),
    ],
)
def test_invalid_setting_fails_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)

    with pytest.raises(ConfigError) as caught:
        load_settings()

    assert variable in str(caught.value)
    assert expected in str(caught.value)


def test_invalid_key_value_is_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTDESK_S3__ACCESS_KEY", '{"not": "a string"}')
    monkeypatch.setenv("QUANTDESK_S3__ENDPOINT", "bad")

    with pytest.raises(ConfigError) as caught:
        load_settings()

    assert "QUANTDESK_S3__ENDPOINT" in str(caught.value)


def test_missing_s3_credentials_say_how_to_get_them(tmp_path: object) -> None:
    settings = load_settings(data_dir=tmp_path)

    with pytest.raises(ConfigError, match="quantdesk up"):
        settings.s3_credentials()


def test_a_provider_block_given_in_part_keeps_its_own_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QUANTDESK_LLAMACPP__BASE_URL", "http://127.0.0.1:9999/v1")
    monkeypatch.setenv("QUANTDESK_OFFLINE__TIMEOUT_SECONDS", "30")

    settings = load_settings(ollama={"base_url": "http://127.0.0.1:11434/v1"})

    llamacpp, offline = settings.provider("llamacpp"), settings.provider("offline")
    assert llamacpp.base_url == "http://127.0.0.1:9999/v1"
    assert (llamacpp.timeout_seconds, llamacpp.max_concurrent) == (900, 1)
    assert settings.provider("ollama").max_concurrent == 2
    assert offline.timeout_seconds == 30
    assert (offline.max_concurrent, offline.requests_per_second) == (16, 1000)


def test_the_embedded_model_serves_llamacpp_unless_a_url_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = PROVIDERS["llamacpp"]
    monkeypatch.delenv("LLAMACPP_BASE_URL", raising=False)
    embedded = load_settings(local_llm={"port": 8499, "context_tokens": 8192})

    assert embedded.base_url(spec) == "http://127.0.0.1:8499/v1"
    assert embedded.context_window(spec) == (8192, "QUANTDESK_LOCAL_LLM__CONTEXT_TOKENS")
    monkeypatch.setenv("LLAMACPP_BASE_URL", "http://gpu-box:8080/v1")
    elsewhere = load_settings(local_llm={"context_tokens": 8192})
    assert elsewhere.base_url(spec) == "http://gpu-box:8080/v1"
    assert elsewhere.context_window(spec) == (
        spec.capabilities.context_tokens,
        "QUANTDESK_LLAMACPP__CONTEXT_TOKENS",
    )
    own = load_settings(llamacpp={"context_tokens": 2048}).context_window(spec)
    assert own == (2048, "QUANTDESK_LLAMACPP__CONTEXT_TOKENS")
    assert load_settings().context_window(PROVIDERS["openai"]) is None


def test_a_runs_web_ui_link_is_the_configured_ui_or_the_embedded_one_never_a_missing_one() -> None:
    from client.links import web_ui_url

    embedded = load_settings()
    external = load_settings(temporal={"embedded": False, "namespace": "desk.a1b2c"})
    cloud = load_settings(
        temporal={
            "embedded": False,
            "namespace": "desk.a1b2c",
            "ui_url": "https://cloud.temporal.io/",
        }
    )

    assert web_ui_url(embedded, "run-1", "r1") == (
        "http://127.0.0.1:8233/namespaces/default/workflows/run-1/r1/history"
    )
    assert web_ui_url(external, "run-1", "r1") is None
    assert web_ui_url(cloud, "run-1") == (
        "https://cloud.temporal.io/namespaces/desk.a1b2c/workflows/run-1/history"
    )


def test_the_default_ports_of_every_server_are_distinct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`quantdesk up` with the MCP server and the local model beside it binds no port twice."""
    for name in [name for name in os.environ if name.startswith("QUANTDESK_")]:
        monkeypatch.delenv(name)
    settings = Settings(_env_file=None, data_dir=tmp_path)
    launches = [temporal_dev_server(settings, {}), s3_server(settings, "k", "s")]
    ports = [
        claim.port for launch in [*launches, console_server(settings)] for claim in launch.ports
    ]
    ports += [settings.local_llm.port, settings.mcp.port]
    assert len(ports) == len(set(ports)), sorted(ports)


def test_up_serves_only_the_llm_roles_a_provider_of_could_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in [v for v in os.environ if v.endswith(("_API_KEY", "_BASE_URL"))]:
        monkeypatch.delenv(variable)
    bare = load_settings()
    with_keys = load_settings(
        anthropic={"api_key": "sk-ant-test"}, ollama={"base_url": "http://gpu-box:11434/v1"}
    )

    assert serving_roles(bare) == (
        WorkerRole.WORKFLOWS,
        WorkerRole.TOOLS,
        WorkerRole.CHARTS,
        WorkerRole.BROKER,
        WorkerRole.LLM_OFFLINE,
    )
    assert "OPENAI_API_KEY" in unanswered(bare)[WorkerRole.LLM_OPENAI]
    assert "or a local model" in unanswered(bare)[WorkerRole.LLM_OPENAI_COMPATIBLE]
    assert set(unanswered(with_keys)) == {WorkerRole.LLM_OPENAI, WorkerRole.LLM_LANGCHAIN}
    with_class = load_settings(langchain={"class": "langchain_aws.ChatBedrockConverse"})
    assert WorkerRole.LLM_LANGCHAIN in serving_roles(with_class)
    local = load_settings(local_llm={"model": "smollm2"})
    assert WorkerRole.LLM_OPENAI_COMPATIBLE in serving_roles(local)


def test_a_json_setting_that_does_not_parse_is_named_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QUANTDESK_DATA_QUOTAS", '{"fred": {"requests": 1')

    with pytest.raises(ConfigError, match='field "data_quotas"') as caught:
        load_settings()

    assert '"requests": 1' not in str(caught.value)
