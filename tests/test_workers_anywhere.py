"""Workers anywhere, one book: what a host that shares its servers is told, and how its
workers name themselves so `up` and `status` tell hosts apart. The hosts themselves, up
and running a desk together, are ``tests/test_several_hosts.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.stack.commands import private_book_warning
from shared.config import ENV_PREFIX, load_settings
from shared.errors import ConfigError
from workers.identity import host_of, is_process, worker_identity


def test_a_sqlite_book_on_shared_servers_is_a_warning_naming_the_variable(
    tmp_path: Path,
) -> None:
    external = {"temporal": {"embedded": False}, "s3": {"embedded": False}}
    warning = private_book_warning(load_settings(data_dir=tmp_path, **external))
    assert warning is not None
    assert str((tmp_path / "quantdesk.db").resolve()) in warning
    assert f"{ENV_PREFIX}DATABASE_URL=postgresql+psycopg://" in warning
    shared = load_settings(database_url="postgresql+psycopg://q@db/q", **external)
    assert private_book_warning(shared) is None
    assert private_book_warning(load_settings(data_dir=tmp_path)) is None  # one host


def test_a_worker_is_its_pid_on_its_own_host() -> None:
    """Hosts may share pids (and, in containers or network namespaces, hostnames): the health
    check of `up` wants both the pid and this host's name."""
    identity = worker_identity("host-b", "tools", pid=42)
    assert identity == "42@host-b tools" and host_of(identity) == "host-b"
    assert is_process(identity, 42, "host-b")
    assert not is_process(identity, 42, "host-c") and not is_process(identity, 2, "host-b")
    assert host_of("temporal-cli") is None


def test_a_host_name_with_a_space_is_refused_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match=f"{ENV_PREFIX}HOST_NAME: .*one word without spaces"):
        load_settings(host_name="host b")
