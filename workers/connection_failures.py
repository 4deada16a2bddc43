"""Why a connection to Temporal failed, as a ``ConfigError`` naming the setting to change.

The SDK reports a failed connect as a ``RuntimeError`` carrying its core's transport
error (rustls, hyper and tonic wording, e.g. ``InvalidCertificate(UnknownIssuer)`` or a
``Status { code: Unauthenticated, ... }`` of its first call), and a refused call after
that as an ``RPCError`` with a gRPC status. ``CAUSES`` recognises each cause from either,
first match wins; what matches nothing is "cannot reach", as before TLS existed. The
wordings were observed with temporalio 1.35 against nginx 1.22 and OpenSSL's s_server
(tests/test_temporal_tls.py pins them). Under TLS 1.3 a server checks the client
certificate after the client has finished its handshake: its refusal (an alert) may be
lost to the connection's reset, leaving only "connection closed" at the first call.

An API key is replaced by a placeholder in any text quoted here: the message may be
logged or shown on a console.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from temporalio.service import RPCError, RPCStatusCode

from shared.config import ENV_PREFIX, TemporalSettings
from shared.errors import ConfigError

# The gRPC status inside a core error: `Status { code: Unauthenticated, message: "..." ...`.
_CORE_STATUS = re.compile(r'Status \{ code: (\w+), message: "((?:[^"\\]|\\.)*)"')
_CLIENT_CERT_ALERTS = (
    "CertificateRequired|BadCertificate|UnknownCA|CertificateUnknown|UnsupportedCertificate|"
    "CertificateExpired|CertificateRevoked|AccessDenied|DecryptError"
)
_REDACTED = "[API key]"
_CLIENT_CERT_FIX = (
    "Set {CERT_FILE} and {KEY_FILE} to a client certificate signed by a CA the server "
    "trusts, and its private key."
)


def variable(field: str) -> str:
    """The variable of one Temporal setting, e.g. ``QUANTDESK_TEMPORAL__CA_FILE``."""
    return f"{ENV_PREFIX}TEMPORAL__{field.upper()}"


@dataclass(frozen=True)
class Observed:
    """A failure, reduced to what the causes are recognised by."""

    text: str
    """The whole error text, any API key replaced."""
    status: RPCStatusCode | None
    """The gRPC status the server (or a proxy) answered with, if it answered one."""
    server_says: str
    """The server's own message with that status ('' without one)."""


@dataclass(frozen=True)
class Cause:
    """One way connecting fails: how it is recognised, and what the user is told.

    ``problem`` and ``fix`` are formatted with ``address``, ``namespace``, ``detail`` (the
    matched words: the pattern's first group, or the server's message), ``client_cert``,
    ``api_key`` (whether one was sent) and every setting's variable by its upper-case
    field name (``{CA_FILE}``)."""

    fields: tuple[str, ...]
    """The settings to change (together), named by the error."""
    problem: str
    fix: str
    pattern: re.Pattern[str] | None = None
    statuses: frozenset[RPCStatusCode] = frozenset()
    over_tls: bool | None = None
    """Only when the client did (True) or did not (False) use TLS; None: either way."""

    def detail(self, seen: Observed, over_tls: bool) -> str | None:
        """The matched words when this is the cause of ``seen``, else None."""
        if self.over_tls is not None and self.over_tls != over_tls:
            return None
        if seen.status in self.statuses:
            return seen.server_says
        if self.pattern is not None:
            found = self.pattern.search(seen.text)
            return None if found is None else next(filter(None, found.groups()), found[0])
        return None if self.statuses else seen.text


CAUSES: tuple[Cause, ...] = (
    Cause(
        fields=("cert_file", "key_file"),
        pattern=re.compile(
            r"(InconsistentKeys\(\w+\)|PrivateKeyParseError|NoCertificatesPresented)"
        ),
        problem="the client certificate and key cannot be used together ({detail})",
        fix="Set {CERT_FILE} to a PEM client certificate and {KEY_FILE} to its own "
        "unencrypted private key.",
    ),
    Cause(
        fields=("server_name",),
        pattern=re.compile(r"(NotValidForName)"),
        problem="the certificate of Temporal at {address} is not valid for the name the "
        "client checks ({detail})",
        fix="Set {SERVER_NAME} to a name the server's certificate carries, or connect by "
        "that name in {ADDRESS}.",
    ),
    Cause(
        fields=("ca_file",),
        pattern=re.compile(r"InvalidCertificate\((\w+)"),
        problem="Temporal at {address} presented a certificate the client does not trust "
        "({detail})",
        fix="Set {CA_FILE} to the PEM bundle of the CA that signed the server's certificate "
        "(unset, only the system's CAs are trusted); check {SERVER_NAME} if the "
        "certificate is for another name.",
    ),
    Cause(
        fields=("cert_file", "key_file"),
        pattern=re.compile(
            rf"received fatal alert: ({_CLIENT_CERT_ALERTS})|(400 Bad Request)", re.IGNORECASE
        ),
        over_tls=True,
        problem="Temporal at {address} refused the TLS client certificate ({detail}; "
        "{client_cert})",
        fix=_CLIENT_CERT_FIX,
    ),
    Cause(
        fields=("cert_file", "key_file"),
        pattern=re.compile(
            r"after connection.*?(connection closed|connection reset|broken pipe)",
            re.IGNORECASE | re.DOTALL,
        ),
        over_tls=True,
        problem="Temporal at {address} closed the TLS connection at the first call ({detail}), "
        "as a server refusing the client certificate does when its alert is lost "
        "({client_cert})",
        fix=_CLIENT_CERT_FIX,
    ),
    Cause(
        fields=("tls",),
        pattern=re.compile(r"InvalidMessage\((\w+)\)|(tls handshake eof)", re.IGNORECASE),
        over_tls=True,
        problem="Temporal at {address} does not answer TLS ({detail}): it is a plain-text endpoint",
        fix="Connect in plain text: unset {TLS} and the settings that imply it ({CA_FILE}, "
        "{CERT_FILE}, {KEY_FILE}, {SERVER_NAME}, {API_KEY}); or set {ADDRESS} to the "
        "cluster's TLS endpoint.",
    ),
    Cause(
        fields=("tls",),
        pattern=re.compile(
            r"after connection.*?(h2 protocol error|broken pipe|connection reset|connection closed"
            r"|connection was not ready)",
            re.IGNORECASE | re.DOTALL,
        ),
        over_tls=False,
        problem="Temporal at {address} dropped the first plain-text call ({detail}): it "
        "expects TLS",
        fix="Set {TLS}=true, with {CA_FILE} when the server's certificate is signed by a CA "
        "of your own.",
    ),
    Cause(
        fields=("api_key",),
        statuses=frozenset({RPCStatusCode.UNAUTHENTICATED, RPCStatusCode.PERMISSION_DENIED}),
        problem="Temporal at {address} refused the credentials for namespace {namespace!r} "
        "({detail}; {api_key})",
        fix="Set {API_KEY} to a valid key with access to the namespace (Temporal Cloud: an "
        "API key of a user or service account), or use mTLS ({CERT_FILE}, {KEY_FILE}) "
        "where the cluster asks for it.",
    ),
    Cause(
        fields=("namespace",),
        statuses=frozenset({RPCStatusCode.NOT_FOUND}),
        problem="namespace {namespace!r} does not exist on Temporal at {address}",
        fix="Set {NAMESPACE} to an existing namespace, or create it: "
        "`temporal operator namespace create --namespace {namespace}`.",
    ),
    Cause(
        fields=("address",),
        problem="cannot reach Temporal at {address} ({detail})",
        fix="Start the embedded stack with `quantdesk up`, or point the setting at your cluster.",
    ),
)


def _status_named(name: str) -> RPCStatusCode | None:
    """The status of a core's CamelCase code name (``PermissionDenied``)."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()
    return RPCStatusCode.__members__.get(snake)


def observe(error: Exception, temporal: TemporalSettings) -> Observed:
    """The error's text and gRPC status, with the API key (if any) never in them."""
    key = temporal.api_key.get_secret_value() if temporal.api_key else ""

    def redacted(text: str) -> str:
        return text.replace(key, _REDACTED) if key else text

    if isinstance(error, RPCError):
        return Observed(redacted(error.message), error.status, redacted(error.message))
    text = redacted(str(error))
    core = _CORE_STATUS.search(text)
    if core is None:
        return Observed(text, None, "")
    return Observed(text, _status_named(core[1]), core[2])


def _context(temporal: TemporalSettings) -> Mapping[str, str]:
    """What a cause's problem and fix are formatted with, besides ``detail``."""
    variables = {field.upper(): variable(field) for field in TemporalSettings.model_fields}
    client_cert = (
        f"{variables['CERT_FILE']} is {temporal.cert_file}"
        if temporal.cert_file
        else "no client certificate is set"
    )
    api_key = "an API key was sent" if temporal.api_key else "no API key is set"
    return {
        **variables,
        "address": temporal.address,
        "namespace": temporal.namespace,
        "client_cert": client_cert,
        "api_key": api_key,
    }


def explain(error: Exception, temporal: TemporalSettings) -> ConfigError:
    """The ``ConfigError`` for a failed connect or first call: its cause in words, the
    variables to change and how."""
    seen = observe(error, temporal)
    # The last cause matches every failure.
    cause, detail = next(
        (cause, detail)
        for cause in CAUSES
        if (detail := cause.detail(seen, temporal.tls)) is not None
    )
    context = {**_context(temporal), "detail": detail}
    return ConfigError(
        " and ".join(variable(field) for field in cause.fields),
        cause.problem.format_map(context),
        fix=cause.fix.format_map(context),
    )
