"""The settings of the stack a desk runs on: task queues, object storage, the Temporal
frontend, the console, the MCP server, and where metrics and traces go."""

from __future__ import annotations

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator

from shared.config.variables import ENV_PREFIX
from shared.pem_files import CertificateFile, PrivateKeyFile
from shared.queues import DEFAULT_WORKFLOWS_QUEUE
from shared.storage.buckets import BUCKETS


class TaskQueues(BaseModel):
    """The configurable task queue: where starters send workflows and the workflow worker polls.

    Activity queues are fixed (``shared.queues``, the provider registry)."""

    workflows: str = DEFAULT_WORKFLOWS_QUEUE


class S3Settings(BaseModel):
    """Object storage: any S3 API (embedded SeaweedFS, MinIO, AWS).

    ``ca_file`` turns ``secure`` on: a CA bundle only means something over HTTPS."""

    endpoint: str = Field("127.0.0.1:8333", description="host:port, no scheme")
    secure: bool = Field(False, description="HTTPS; implied by ca_file")
    ca_file: CertificateFile | None = Field(
        None, description="PEM bundle of the CAs to trust instead of the system's (HTTPS)"
    )
    access_key: SecretStr | None = None
    secret_key: SecretStr | None = None
    region: str = "us-east-1"
    embedded: bool = Field(True, description="`quantdesk up` starts the S3 server itself")

    @field_validator("endpoint")
    @classmethod
    def _no_scheme(cls, value: str) -> str:
        if "://" in value:
            raise ValueError("give host:port without http:// (set s3.secure for TLS)")
        host, _, port = value.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError("expected host:port, e.g. 127.0.0.1:8333")
        return value

    @model_validator(mode="after")
    def _secure_implied(self) -> S3Settings:
        self.secure = self.secure or self.ca_file is not None
        return self

    @property
    def buckets(self) -> tuple[str, ...]:
        """Every bucket quantdesk writes to."""
        return BUCKETS

    @property
    def port(self) -> int:
        """The port of the endpoint."""
        return int(self.endpoint.rpartition(":")[2])


class TemporalSettings(BaseModel):
    """Where the Temporal frontend is, how to reach it securely, and whether `up` runs the
    dev server.

    Any of ``ca_file``, ``cert_file``/``key_file``, ``server_name`` or ``api_key`` turns
    ``tls`` on: each only means something over TLS, and an API key must never travel in
    clear text (Temporal Cloud accepts it over TLS only). ``tls`` alone trusts the
    system's CAs, as for Temporal Cloud."""

    address: str = "127.0.0.1:7233"
    namespace: str = "default"
    ui_port: int = Field(8233, ge=1, le=65535)
    ui_url: str | None = Field(
        None,
        description="the Temporal Web UI that shows this cluster's runs, e.g. "
        "https://cloud.temporal.io; default: the embedded dev server's, none for an external "
        "cluster (no link is shown rather than one to a UI that is not there)",
    )
    embedded: bool = Field(True, description="`quantdesk up` starts the dev server itself")
    tls: bool = Field(
        False,
        description="connect over TLS; implied by any of ca_file, cert_file, key_file, "
        "server_name, api_key",
    )
    ca_file: CertificateFile | None = Field(
        None, description="PEM bundle of the CAs to trust instead of the system's"
    )
    cert_file: CertificateFile | None = Field(
        None, description="client certificate (PEM) for mTLS; needs key_file"
    )
    key_file: PrivateKeyFile | None = Field(
        None, description="private key (PEM) of cert_file; needs cert_file"
    )
    server_name: str | None = Field(
        None,
        description="name the server's certificate is checked against, sent as TLS SNI "
        "(when the address is an IP, or a name the certificate does not carry)",
    )
    api_key: SecretStr | None = Field(
        None, description="sent as `Authorization: Bearer <key>` on every call (Temporal Cloud)"
    )

    @model_validator(mode="after")
    def _tls_implied(self) -> TemporalSettings:
        """A client certificate comes with its key; any TLS setting turns TLS on."""
        if (self.cert_file is None) != (self.key_file is None):
            given, missing = ("CERT_FILE", "KEY_FILE")
            if self.cert_file is None:
                given, missing = missing, given
            raise ValueError(
                f"{ENV_PREFIX}TEMPORAL__{given} is set without {ENV_PREFIX}TEMPORAL__{missing}: "
                "mTLS needs a client certificate and its private key; set both or neither"
            )
        implying = (self.ca_file, self.cert_file, self.server_name, self.api_key)
        self.tls = self.tls or any(value is not None for value in implying)
        return self

    @property
    def web_ui(self) -> str | None:
        """The base URL of the Web UI showing this cluster's runs, if one is known."""
        if self.ui_url:
            return self.ui_url.rstrip("/")
        return f"http://127.0.0.1:{self.ui_port}" if self.embedded else None

    @property
    def port(self) -> int:
        """The gRPC port of the frontend address."""
        return int(self.address.rpartition(":")[2])


class ConsoleSettings(BaseModel):
    """The web console (`quantdesk console`, a component of `quantdesk up`)."""

    host: str = Field(
        "127.0.0.1", description="address to bind; beyond loopback a token is required"
    )
    port: int = Field(8400, ge=1, le=65535)
    token: SecretStr | None = Field(
        None, description="asked of every request (header, cookie or ?token=) when set"
    )
    public_url: str | None = Field(
        None,
        pattern=r"^https?://",
        description="where people reach the console, for the links in notices (default: "
        "http://host:port as bound)",
    )

    def local_url(self) -> str:
        """Where a browser on this machine opens the console."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}"

    def run_page(self, workflow_id: str) -> str:
        """A run's page, as people reach it (``public_url``, else this machine's address)."""
        return f"{(self.public_url or self.local_url()).rstrip('/')}/runs/{workflow_id}"


MCP_APPROVE_SETTING = f"{ENV_PREFIX}MCP__ALLOW_APPROVE"
MCP_TOKEN_SETTING = f"{ENV_PREFIX}MCP__TOKEN"


class McpSettings(BaseModel):
    """The MCP server (`quantdesk mcp`): an AI assistant's door to the runs."""

    allow_approve: bool = Field(
        False,
        description="offer approve_plan at all; even then a person confirms each approval "
        "where the host can ask",
    )
    host: str = Field(
        "127.0.0.1", description="`--http`: address to bind; beyond loopback a token is required"
    )
    port: int = Field(
        8420, ge=1, le=65535, description="`--http`: the port (8410 is the local model's)"
    )
    token: SecretStr | None = Field(
        None, description="`--http`: asked of every request as `Authorization: Bearer` when set"
    )


class MetricsSettings(BaseModel):
    """Where a long-running process (a worker, the console, the MCP server) serves its
    Prometheus metrics. `up` gives each of its processes a free port; other commands (a
    `run`, a `status`) never serve any."""

    host: str = Field("127.0.0.1", description="address to bind the /metrics endpoint to")
    port: int | None = Field(
        None, ge=1, le=65535, description="the /metrics port; unset: no endpoint, no cost"
    )
    up_ports_from: int = Field(
        9470,
        ge=1,
        le=65000,
        description="`up`: the console's /metrics port; each worker process takes the next "
        "(the dev server's is its gRPC port + 11)",
    )


class OtelSettings(BaseModel):
    """Traces over OTLP/HTTP (``workers.tracing``): off unless an endpoint is set."""

    endpoint: str | None = Field(
        None,
        pattern=r"^https?://\S+$",
        description="the collector's OTLP/HTTP base URL, e.g. http://localhost:4318 (spans go "
        "to <endpoint>/v1/traces); unset: no tracing, and no cost",
    )
    service_name: str = Field(
        "quantdesk", min_length=1, description="the service.name of this process's spans"
    )
