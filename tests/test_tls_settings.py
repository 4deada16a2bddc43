"""TLS settings of Temporal and S3: what turns TLS on, and the errors at load that name the
variable (a missing file, a file that is not the PEM it should be, half a key pair)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.stack.components import worker_env
from shared.config import load_settings
from shared.errors import ConfigError
from tests.certificates import TlsFiles, make_tls_files

API_KEY = "qd-test-api-key-0123456789"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("certs"))


def test_nothing_set_means_plain_text() -> None:
    settings = load_settings()

    assert settings.temporal.tls is False
    assert settings.s3.secure is False


@pytest.mark.parametrize(
    "given",
    [
        {"ca_file": "ca"},
        {"cert_file": "client", "key_file": "client-key"},
        {"server_name": "temporal.example.com"},
        {"api_key": API_KEY},
    ],
    ids=["ca_file", "client certificate", "server_name", "api_key"],
)
def test_any_tls_setting_turns_tls_on(files: TlsFiles, given: dict[str, str]) -> None:
    paths = {"ca": files.ca, "client": files.client.cert, "client-key": files.client.key}
    temporal = {field: str(paths.get(value, value)) for field, value in given.items()}

    assert load_settings(temporal=temporal).temporal.tls is True


def test_a_ca_file_turns_s3_https_on(files: TlsFiles) -> None:
    assert load_settings(s3={"ca_file": str(files.ca)}).s3.secure is True


@pytest.mark.parametrize(
    "variable",
    [
        "QUANTDESK_TEMPORAL__CA_FILE",
        "QUANTDESK_TEMPORAL__CERT_FILE",
        "QUANTDESK_TEMPORAL__KEY_FILE",
        "QUANTDESK_S3__CA_FILE",
    ],
)
def test_a_missing_file_fails_at_load_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str
) -> None:
    monkeypatch.setenv(variable, str(tmp_path / "nowhere.pem"))

    with pytest.raises(ConfigError) as caught:
        load_settings()

    assert f"{variable}: Value error, no file at {tmp_path / 'nowhere.pem'}" in str(caught.value)


def test_a_file_that_is_not_the_pem_it_should_be_is_named(
    monkeypatch: pytest.MonkeyPatch, files: TlsFiles
) -> None:
    monkeypatch.setenv("QUANTDESK_TEMPORAL__CA_FILE", str(files.client.key))
    monkeypatch.setenv("QUANTDESK_TEMPORAL__CERT_FILE", str(files.client.cert))
    monkeypatch.setenv("QUANTDESK_TEMPORAL__KEY_FILE", str(files.client.cert))

    with pytest.raises(ConfigError) as caught:
        load_settings()

    message = str(caught.value)
    assert f"QUANTDESK_TEMPORAL__CA_FILE: Value error, {files.client.key} holds no PEM " in message
    assert (
        f"QUANTDESK_TEMPORAL__KEY_FILE: Value error, {files.client.cert} holds no PEM " in message
    )
    assert "QUANTDESK_TEMPORAL__CERT_FILE" not in message


@pytest.mark.parametrize(
    ("given", "missing"),
    [("CERT_FILE", "KEY_FILE"), ("KEY_FILE", "CERT_FILE")],
)
def test_half_a_client_key_pair_names_both_variables(
    monkeypatch: pytest.MonkeyPatch, files: TlsFiles, given: str, missing: str
) -> None:
    path = files.client.cert if given == "CERT_FILE" else files.client.key
    monkeypatch.setenv(f"QUANTDESK_TEMPORAL__{given}", str(path))
    monkeypatch.setenv("QUANTDESK_TEMPORAL__API_KEY", API_KEY)

    with pytest.raises(ConfigError) as caught:
        load_settings()

    message = str(caught.value)
    assert (
        f"QUANTDESK_TEMPORAL__{given} is set without QUANTDESK_TEMPORAL__{missing}: mTLS needs "
        "a client certificate and its private key; set both or neither" in message
    )
    assert API_KEY not in message


def test_the_api_key_never_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUANTDESK_TEMPORAL__API_KEY", API_KEY)

    settings = load_settings()

    assert API_KEY not in repr(settings)
    assert API_KEY not in settings.model_dump_json()
    assert settings.temporal.api_key is not None
    assert settings.temporal.api_key.get_secret_value() == API_KEY


def test_workers_started_by_up_are_given_the_tls_settings_and_the_key_itself(
    files: TlsFiles,
) -> None:
    settings = load_settings(
        temporal={"ca_file": str(files.ca), "server_name": "temporal.internal", "api_key": API_KEY}
    )

    env = worker_env(settings)

    assert env["QUANTDESK_TEMPORAL__API_KEY"] == API_KEY
    assert env["QUANTDESK_TEMPORAL__CA_FILE"] == str(files.ca)
    assert env["QUANTDESK_TEMPORAL__SERVER_NAME"] == "temporal.internal"
    assert env["QUANTDESK_TEMPORAL__TLS"] == "True"
