"""docker-compose.yml and the Dockerfile agree with the settings, the roles and the stack.

Nothing here needs Docker: the compose file is read as YAML with the defaults of its
``${VAR:-default}`` references filled in, which is what `docker compose up` sees on a
machine with no overrides.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import AliasChoices, BaseModel
from pydantic.fields import FieldInfo

from shared.config import ENV_PREFIX, Settings, load_settings
from shared.llm.providers import PROVIDERS
from shared.search_attributes import (
    SEARCH_ATTRIBUTES,
    TASK_PROBLEMS_BEFORE_REPORTED,
    TASK_PROBLEMS_SETTING,
)
from shared.server_settings import ONE_PARTITION
from workers.roles import ROLE_NAMES

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = re.compile(r"\$\{(?P<name>\w+)(?::?-(?P<default>[^}]*))?\}")


def _defaults(text: str) -> str:
    """``text`` as compose interpolates it with nothing set (``$$`` is a literal ``$``)."""
    return REFERENCE.sub(lambda m: m["default"] or "", text).replace("$$", "$")


@pytest.fixture(scope="module")
def services() -> dict[str, dict[str, Any]]:
    compose = yaml.safe_load(_defaults((ROOT / "docker-compose.yml").read_text()))
    return compose["services"]


def _quantdesk_env(service: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in service["environment"].items() if k.startswith(ENV_PREFIX)}


def _field(model: type[BaseModel], name: str) -> FieldInfo | None:
    """The field read from ``name``: by its own name, or by one of its aliases."""
    for own, field in model.model_fields.items():
        alias = field.validation_alias
        aliases = alias.choices if isinstance(alias, AliasChoices) else [alias]
        if name == own or name in aliases:
            return field
    return None


def _is_setting(variable: str) -> bool:
    """Whether ``QUANTDESK_A__B`` names field ``b`` of the model in field ``a`` of Settings."""
    model: type[BaseModel] | None = Settings
    for part in variable.removeprefix(ENV_PREFIX).lower().split("__"):
        field = _field(model, part) if model else None
        if field is None:
            return False
        nested = field.annotation
        model = nested if isinstance(nested, type) and issubclass(nested, BaseModel) else None
    return True


def test_services_and_ports(services: dict[str, dict[str, Any]]) -> None:
    expected = {"postgresql", "temporal", "temporal-ui", "minio"}
    expected |= {f"worker-{role}" for role in ROLE_NAMES}
    assert expected <= services.keys()
    published = {port.split(":")[0] for s in services.values() for port in s.get("ports", [])}
    assert {"7233", "8080", "9000", "9001"} <= published


def test_one_worker_service_per_role(services: dict[str, dict[str, Any]]) -> None:
    for role in ROLE_NAMES:
        worker = services[f"worker-{role}"]
        assert worker["command"] == ["worker", "--role", role]
        assert worker["build"] == "."
    workers = {name for name in services if name.startswith("worker-")}
    assert workers == {f"worker-{role}" for role in ROLE_NAMES}


def test_llm_queues_scale_with_replicas(services: dict[str, dict[str, Any]]) -> None:
    for role in ROLE_NAMES:
        if role.startswith("llm-"):
            assert int(services[f"worker-{role}"]["deploy"]["replicas"]) >= 1


def test_every_quantdesk_variable_is_a_setting(services: dict[str, dict[str, Any]]) -> None:
    variables = {v for s in services.values() if "environment" in s for v in _quantdesk_env(s)}
    assert variables, "the workers must be configured through QUANTDESK_* variables"
    assert not [v for v in variables if not _is_setting(v)]


def test_workers_settings_point_at_the_compose_servers(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable, value in _quantdesk_env(services["worker-llm-offline"]).items():
        monkeypatch.setenv(variable, value)
    settings = load_settings(_env_file=None)
    assert settings.temporal.address == "temporal:7233"
    assert settings.s3.endpoint == "minio:9000"
    assert not settings.temporal.embedded and not settings.s3.embedded
    minio = services["minio"]["environment"]
    assert settings.s3_credentials() == (minio["MINIO_ROOT_USER"], minio["MINIO_ROOT_PASSWORD"])
    postgres = services["postgresql"]["environment"]
    user, password, db = (
        postgres[k] for k in ("POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB")
    )
    assert settings.resolved_database_url == (
        f"postgresql+psycopg://{user}:{password}@postgresql:5432/{db}"
    )
    temporal = services["temporal"]["environment"]
    assert (temporal["POSTGRES_USER"], temporal["POSTGRES_PWD"]) == (user, password)


def test_bucket_job_creates_the_configured_buckets(services: dict[str, dict[str, Any]]) -> None:
    script = services["minio-create-buckets"]["command"][0]
    loop = re.search(r"for bucket in ([\w ]+); do", script)
    assert loop and set(loop[1].split()) == set(Settings().s3.buckets)


def test_namespace_job_registers_the_search_attributes(
    services: dict[str, dict[str, Any]],
) -> None:
    script = services["temporal-create-namespace"]["command"][0]
    registered = {}
    for line in re.findall(r"search-attribute create (.+)", script):
        kind = re.search(r"--type (\w+)", line)[1]
        registered |= dict.fromkeys(re.findall(r"--name (\w+)", line), kind)
    assert registered == SEARCH_ATTRIBUTES


def test_the_server_marks_stuck_runs_as_the_dev_server_does() -> None:
    compose = yaml.safe_load(_defaults((ROOT / "docker-compose.yml").read_text()))
    dynamic = yaml.safe_load(compose["configs"]["temporal-dynamic-config"]["content"])
    assert dynamic[TASK_PROBLEMS_SETTING] == [
        {"value": TASK_PROBLEMS_BEFORE_REPORTED, "constraints": {}}
    ]


def test_each_llm_queue_has_one_partition_so_its_rate_limit_holds() -> None:
    compose = yaml.safe_load(_defaults((ROOT / "docker-compose.yml").read_text()))
    dynamic = yaml.safe_load(compose["configs"]["temporal-dynamic-config"]["content"])
    queues = {spec.task_queue for spec in PROVIDERS.values()}
    for setting in (value.split("=")[0] for value in ONE_PARTITION):
        rows = dynamic[setting]
        assert {(row["constraints"]["taskQueueName"], row["value"]) for row in rows} == {
            (queue, 1) for queue in queues
        }


def test_dockerfile_installs_the_project() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim", dockerfile, re.MULTILINE)
    assert re.search(r"^COPY \. \.", dockerfile, re.MULTILINE)
    assert re.search(r"pip install \"?\.", dockerfile)
    assert 'ENTRYPOINT ["quantdesk"]' in dockerfile
    script = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "quantdesk" in script


def test_dockerignore_keeps_what_the_install_needs() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    needed = {"pyproject.toml", project["project"]["readme"], *packages}
    assert not needed & ignored
    assert {".env", ".venv", ".git"} <= ignored


def test_the_console_is_opt_in_published_on_loopback_and_asks_for_a_token(
    services: dict[str, dict[str, Any]],
) -> None:
    console = services["console"]
    assert console["profiles"] == ["console"] and console["command"] == ["console"]
    assert console["ports"] == ["127.0.0.1:8400:8400"]
    env = _quantdesk_env(console)
    # Bound beyond the container's loopback, `quantdesk console` refuses to start without it.
    assert env["QUANTDESK_CONSOLE__HOST"] == "0.0.0.0" and "QUANTDESK_CONSOLE__TOKEN" in env
    assert "console" in (ROOT / "Dockerfile").read_text().split("pip install", 1)[1].split("\n")[0]


def test_payloads_are_plain_unless_encryption_is_asked_for(
    services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable, value in _quantdesk_env(services["console"]).items():
        monkeypatch.setenv(variable, value)
    settings = load_settings(_env_file=None)
    # An external cluster encrypts by default; this one is the user's own, so it does not.
    assert not settings.temporal.embedded and settings.payload_keys() is None
    assert settings.web_ui_origins == ["http://localhost:8080", "http://127.0.0.1:8080"]
    ui = services["temporal-ui"]["environment"]
    assert (
        ui["TEMPORAL_CODEC_ENDPOINT"] == "" and ui["TEMPORAL_CODEC_INCLUDE_CREDENTIALS"] == "true"
    )
