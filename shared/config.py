"""The one settings model, read from ``QUANTDESK_*`` variables and ``.env``.

Nested values use a double underscore: ``QUANTDESK_OPENAI__QUICK_MODEL``. The
vendors' own variables (``OPENAI_API_KEY``, ``ANTHROPIC_BASE_URL``,
``DASHSCOPE_API_KEY``, ``OLLAMA_BASE_URL``...) are honoured as fallbacks, so a
user's existing shell set-up just works. Settings are read by workers and the
CLI only; workflows never read the environment.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import timedelta
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    Field,
    SecretStr,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from shared.broker.guardrails import BrokerLimits
from shared.data.contracts import DataKind
from shared.data.factory import VENDORS
from shared.errors import ConfigError
from shared.llm.pricing import ModelPrice
from shared.llm.providers import (
    PROVIDERS,
    ClientKind,
    LlmRole,
    ProviderSpec,
    Serving,
    list_prices,
)
from shared.notify.notices import NoticeKind
from shared.payload_keys import PayloadKeys, parse_key_lines
from shared.pem_files import CertificateFile, PrivateKeyFile
from shared.portfolio.costs import Costs
from shared.queues import DEFAULT_WORKFLOWS_QUEUE
from shared.storage.buckets import BUCKETS

ENV_PREFIX = "QUANTDESK_"


def provider_setting(provider: str, field: str) -> str:
    """The variable of one provider setting, e.g. ``QUANTDESK_QWEN__QUICK_MODEL``."""
    return f"{ENV_PREFIX}{provider.upper()}__{field.upper()}"


LANGUAGE_PATTERN = r"^[^\W\d_][^\W\d_ ()-]*(?:[ -][^\W\d_()]+)*(?: \([^()]{1,30}\))?$"
"""A language's name or code as people write it: ``German``, ``de``, ``Brazilian Portuguese``,
``Deutsch``, ``zh-Hans``, ``Chinese (Simplified)``; never an instruction of its own."""
LANGUAGE_MAX = 40


class ProviderSettings(Serving):
    """One provider's block, ``QUANTDESK_<PROVIDER>__<FIELD>``: the serving limits (their
    defaults are the provider row's) and overrides that fall back to the row and the
    vendor's variables when unset."""

    quick_model: str | None = None
    deep_model: str | None = None
    vision_model: str | None = None
    api_key: SecretStr | None = None
    base_url: str | None = None
    context_tokens: int | None = Field(
        None,
        ge=512,
        description="the model's context window, over the registry row's (prompts are "
        "trimmed to fit it)",
    )

    temperature: float | None = Field(
        None,
        ge=0,
        le=2,
        description="the sampling temperature when a call sets none (0: the likeliest token)",
    )
    seed: int | None = Field(
        None,
        ge=0,
        description="the sampling seed sent with every call (OpenAI-style servers; llama.cpp "
        "answers the same way each time with a seed and temperature 0)",
    )
    knowledge_cutoff: str | None = Field(
        None,
        pattern=r"^(\d{4}-\d{2}(-\d{2})?|never)$",
        description="the training cutoff of this provider's models (YYYY-MM or YYYY-MM-DD; "
        "never: a rule that learned from no period), over models.dev's and the registry row's",
    )

    @classmethod
    def of(cls, spec: ProviderSpec) -> ProviderSettings:
        """The block a provider has when nothing is set: its row's serving limits."""
        return cls(**spec.serving.model_dump())


MODEL_KWARGS = ("model", "model_name", "model_id")
"""The keyword arguments a LangChain class names its model with, the usual one first."""


def _json_object(value: object) -> object:
    """A JSON object given as text (an environment variable) parsed, anything else as given."""
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None
    if not isinstance(parsed, dict):
        raise ValueError('expected a JSON object of keyword arguments, e.g. {"region_name": "x"}')
    return parsed


class LangChainSettings(ProviderSettings):
    """The block of a langchain row: which LangChain chat model class serves it, built with
    which keyword arguments. The class is imported and the arguments checked against it when
    the worker starts (``shared.llm.clients.langchain_chat``), not here: settings are read by
    every process, and only the worker serving the row needs the integration installed."""

    chat_class: str | None = Field(
        None,
        validation_alias=AliasChoices("class", "chat_class"),
        description="the chat model class by import path, e.g. langchain_aws.ChatBedrockConverse "
        "(QUANTDESK_LANGCHAIN__CLASS); unset: the row cannot answer",
    )
    # Not named `kwargs`: pydantic's generated __init__ takes **kwargs.
    arguments: Annotated[dict[str, Any], NoDecode, BeforeValidator(_json_object)] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("kwargs", "arguments"),
        description='the class\'s keyword arguments as JSON, e.g. {"region_name": "us-east-1"}; '
        "a `model` here is every role's model unless QUICK_MODEL, DEEP_MODEL or VISION_MODEL "
        "says otherwise; keys go in API_KEY or the class's own variables, never here",
    )

    @property
    def default_model(self) -> str | None:
        """The model the keyword arguments name, if any: every role's unless set apart."""
        given = self.arguments
        named = next((given[name] for name in MODEL_KWARGS if name in given), None)
        return named if isinstance(named, str) and named else None


def settings_block_of(spec: ProviderSpec) -> type[ProviderSettings]:
    """The settings block type of a row: langchain rows name a class and its arguments too."""
    return LangChainSettings if spec.client is ClientKind.LANGCHAIN else ProviderSettings


class ContextWindow(NamedTuple):
    """The context window prompts are planned for, and the variable that sets it."""

    tokens: int
    setting: str


# One settings block per registry row, generated so that a row is all a provider needs:
# pydantic-settings reads QUANTDESK_<NAME>__<FIELD> (and `<name>=` keywords, .env lines)
# for declared fields only. Type checkers see BaseSettings; `Settings.provider` is the
# typed way to a block.
if TYPE_CHECKING:
    _ProviderBlocks = BaseSettings
else:
    _ProviderBlocks = create_model(
        "_ProviderBlocks",
        __base__=BaseSettings,
        **{
            name: (
                settings_block_of(spec),
                Field(settings_block_of(spec).of(spec), description=f"provider {name}"),
            )
            for name, spec in PROVIDERS.items()
        },
    )


class LocalLlmSettings(BaseModel):
    """The embedded llama.cpp server that `quantdesk up` runs when a GGUF model is named."""

    model: Path | None = Field(
        None,
        description="a GGUF file; when set, `up` starts the local-llm component and provider "
        "llamacpp uses it (`quantdesk model install smollm2` fetches a small one)",
    )
    port: int = Field(8410, ge=1, le=65535)
    context_tokens: int = Field(
        4096, ge=512, le=1_048_576, description="the server's context window (n_ctx)"
    )
    threads: int | None = Field(None, ge=1, le=512, description="CPU threads; None: all cores")

    @property
    def url(self) -> str:
        """The server's OpenAI-compatible base URL."""
        return f"http://127.0.0.1:{self.port}/v1"


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


CODEC_KEYS_SETTING = f"{ENV_PREFIX}CODEC__KEYS"
CODEC_KEY_FILE_SETTING = f"{ENV_PREFIX}CODEC__KEY_FILE"
CODEC_ENABLED_SETTING = f"{ENV_PREFIX}CODEC__ENABLED"
CODEC_ORIGINS_SETTING = f"{ENV_PREFIX}CODEC__WEB_UI_ORIGINS"


class CodecSettings(BaseModel):
    """Payload encryption: every client (workers, CLI, console, benches) seals what it sends
    Temporal with AES-256-GCM, so histories hold no plain prompt, report or book figure.

    The keys are ``ID:BASE64KEY`` lines (``quantdesk codec new-key``), from ``keys`` or
    ``key_file``, the same on every host: the first encrypts, every one decrypts."""

    keys: SecretStr | None = Field(
        None, description="key lines, comma-separated: the first encrypts, all decrypt"
    )
    key_file: Path | None = Field(
        None, description="a file of key lines, one per line (a secrets mount); instead of keys"
    )
    enabled: bool | None = Field(
        None,
        description="encrypt payloads; None: on for an external cluster (temporal.embedded "
        "false), off for the embedded one",
    )
    web_ui_origins: list[str] | None = Field(
        None,
        description="origins whose pages may call the console's codec endpoint, comma-"
        "separated; None: the embedded Web UI's (http://127.0.0.1:<ui_port>, localhost too)",
    )

    @field_validator("keys")
    @classmethod
    def _key_lines(cls, value: SecretStr | None) -> SecretStr | None:
        """Malformed key lines fail when settings are read, not at the first payload."""
        if value is None or not value.get_secret_value().strip():
            return None
        parse_key_lines(value.get_secret_value())
        return value

    @field_validator("web_ui_origins", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return [origin.strip().rstrip("/") for origin in value.split(",") if origin.strip()]
        return value

    def ring(self, *, embedded: bool) -> PayloadKeys | None:
        """The key ring when payloads are encrypted (``enabled``, else on for an external
        cluster), None when not; a ``ConfigError`` naming the setting when it is on without
        usable keys."""
        if not (self.enabled if self.enabled is not None else not embedded):
            return None
        if self.keys is not None and self.key_file is not None:
            raise ConfigError(
                CODEC_KEYS_SETTING,
                f"both {CODEC_KEYS_SETTING} and {CODEC_KEY_FILE_SETTING} are set",
                fix="Keep one of them, so there is no doubt which key encrypts.",
            )
        if self.keys is not None:
            pairs = parse_key_lines(self.keys.get_secret_value())
            return PayloadKeys(pairs, source=CODEC_KEYS_SETTING)
        if self.key_file is not None:
            return PayloadKeys(self._file_lines(self.key_file), source=CODEC_KEY_FILE_SETTING)
        why = (
            f"{CODEC_ENABLED_SETTING} is true"
            if self.enabled
            else f"Temporal is external ({ENV_PREFIX}TEMPORAL__EMBEDDED=false)"
        )
        raise ConfigError(
            CODEC_KEYS_SETTING,
            f"payloads are encrypted because {why}, but no key is set",
            fix=f"Run `quantdesk codec new-key` and put its line in {CODEC_KEYS_SETTING} or in "
            f"the file {CODEC_KEY_FILE_SETTING} names, the same on every host; or set "
            f"{CODEC_ENABLED_SETTING}=false to send payloads in plain text.",
        )

    @staticmethod
    def _file_lines(path: Path) -> list[tuple[str, bytes]]:
        try:
            text = path.read_text()
        except OSError as error:
            raise ConfigError(
                CODEC_KEY_FILE_SETTING,
                f"cannot read the key file {path} ({error.strerror})",
                fix="Point it at a readable file of ID:BASE64KEY lines.",
            ) from None
        try:
            return parse_key_lines(text)
        except ValueError as error:
            raise ConfigError(
                CODEC_KEY_FILE_SETTING,
                f"the key file {path}: {error}",
                fix="Write one ID:BASE64KEY line per key (`quantdesk codec new-key`).",
            ) from None


ALPACA_PAPER_URL = "https://paper-api.alpaca.markets"
ALPACA_LIVE_URL = "https://api.alpaca.markets"
ALPACA_KEY_ID_ENV = "APCA_API_KEY_ID"
ALPACA_SECRET_KEY_ENV = "APCA_API_SECRET_KEY"


def _from_vendor_variables(data: object, variables: dict[str, str]) -> object:
    """``data`` with each field of ``variables`` not given taken from the vendor's own
    environment variable (``FRED_API_KEY``), as the vendor's SDKs read it."""
    if not isinstance(data, dict):
        return data
    merged = dict(data)
    for field, variable in variables.items():
        if merged.get(field) is None and os.environ.get(variable):
            merged[field] = os.environ[variable]
    return merged


FRED_KEY_ENV = "FRED_API_KEY"
FRED_URL = "https://api.stlouisfed.org/fred"
FINNHUB_KEY_ENV = "FINNHUB_API_KEY"
MASSIVE_KEY_ENV = "MASSIVE_API_KEY"


class _KeyedVendor(BaseModel):
    """A keyed HTTP data vendor: where its API is, how long one call may take, and the key,
    read from the vendor's own variable (``KEY_VARIABLE``, as its clients read it) when not
    given."""

    KEY_VARIABLE: ClassVar[str]

    timeout_seconds: float = Field(10, gt=0, le=120, description="one HTTP call's limit")
    api_key: SecretStr | None = Field(
        None, description="default: the vendor's variable (FRED_API_KEY, FINNHUB_API_KEY...)"
    )

    @model_validator(mode="before")
    @classmethod
    def _key_from_the_vendors_variable(cls, data: object) -> object:
        return _from_vendor_variables(data, {"api_key": cls.KEY_VARIABLE})


class FredSettings(_KeyedVendor):
    """FRED / ALFRED, the St. Louis Fed's macro series with their vintages (a free key;
    120 requests a minute)."""

    KEY_VARIABLE = FRED_KEY_ENV
    base_url: str = Field(FRED_URL, description="the API root; a stand-in or a proxy may take it")


class FinnhubSettings(_KeyedVendor):
    """Finnhub: company news, insider transactions and financials as reported (a free key;
    60 requests a minute and 30 a second)."""

    KEY_VARIABLE = FINNHUB_KEY_ENV
    base_url: str = Field("https://finnhub.io/api/v1", description="the API root")
    news_history_days: int | None = Field(
        365,
        ge=1,
        description="how far back your plan serves company news (the free tier: about a "
        "year); None: no limit",
    )


class MassiveSettings(_KeyedVendor):
    """Massive (formerly Polygon): raw daily bars with their splits and dividends, the grouped
    daily file, the ticker list as of a date, news (a free key; 5 requests a minute)."""

    KEY_VARIABLE = MASSIVE_KEY_ENV
    base_url: str = Field("https://api.massive.com", description="the API root")


class CcxtSettings(BaseModel):
    """ccxt: public crypto market data from one exchange (no key)."""

    exchange: Literal["binance", "kraken", "coinbase"] = Field(
        "binance", description="the exchange whose public candles are read"
    )
    base_url: str | None = Field(
        None, description="the exchange's public API root instead of its own (a stand-in, a proxy)"
    )
    timeout_seconds: float = Field(10, gt=0, le=120, description="one HTTP call's limit")


class StocktwitsSettings(BaseModel):
    """StockTwits' public streams: what is said about a symbol now (no key; about 200
    requests an hour). Only ``quantdesk data record social`` reads it, to keep posts for later
    runs."""

    base_url: str = Field(
        "https://api.stocktwits.com/api/2",
        description="the API root; a stand-in or a proxy may take it",
    )
    timeout_seconds: float = Field(10, gt=0, le=120, description="one HTTP call's limit")


def _apprise_urls(value: object) -> object:
    """A JSON list, or URLs separated by white space (not commas: an Apprise URL may hold
    them, as ``mailto://...?to=a@x.org,b@x.org``)."""
    if isinstance(value, str):
        text = value.strip()
        return json.loads(text) if text.startswith("[") else text.split()
    return value


AppriseUrls = Annotated[list[SecretStr], NoDecode, BeforeValidator(_apprise_urls)]
"""Apprise URLs carry tokens and passwords: secrets, never shown whole."""


class NotifySettings(BaseModel):
    """Where the desk's notices go: Apprise URLs (Slack, Telegram, e-mail, ntfy, Matrix, a
    JSON webhook...: https://github.com/caronc/apprise/wiki)."""

    urls: AppriseUrls = Field(
        default_factory=list, description="every notice's URLs, space-separated or a JSON list"
    )
    routes: dict[NoticeKind, AppriseUrls] = Field(
        default_factory=dict,
        description='a kind\'s own URLs instead of `urls`, JSON like {"drift": ["mailto://..."]}',
    )
    escalate_urls: AppriseUrls = Field(
        default_factory=list,
        description="who is told, besides, when an approval is about to time out",
    )
    remind_after: timedelta = Field(
        timedelta(minutes=30), description="a reminder when a plan still waits this long"
    )
    escalate_before: timedelta = Field(
        timedelta(minutes=15),
        description="the escalation, this long before an approval times out (at half the "
        "timeout when that is shorter)",
    )
    timeout_seconds: float = Field(
        10, gt=0, le=120, description="one URL's send limit: a notifier down never holds a run"
    )

    def urls_of(self, kind: NoticeKind) -> list[SecretStr]:
        """The URLs a notice of ``kind`` goes to: its route, else (an escalation) the
        escalation list, else every notice's."""
        if kind in self.routes:
            return self.routes[kind]
        if kind is NoticeKind.APPROVAL_ESCALATION and self.escalate_urls:
            return self.escalate_urls
        return self.urls


class BudgetSettings(BaseModel):
    """Each book's daily spending limit on model calls, across all its runs (a book's own
    limit, set with `quantdesk budget raise --book`, is kept in the database and wins)."""

    daily_usd: float | None = Field(
        None, gt=0, description="USD a book's runs may spend on models in a UTC day"
    )
    daily_tokens: int | None = Field(
        None, ge=1, description="tokens a book's runs may spend in a UTC day (unpriced models)"
    )


class VendorQuota(BaseModel):
    """At most ``requests`` in any ``seconds``, for the whole desk (``shared.data.quota``)."""

    requests: int = Field(ge=1)
    seconds: float = Field(gt=0)


DEFAULT_QUOTAS: dict[str, VendorQuota] = {
    "sec": VendorQuota(requests=8, seconds=1),
    "fred": VendorQuota(requests=110, seconds=60),
    "finnhub": VendorQuota(requests=55, seconds=60),
    "finnhub/burst": VendorQuota(requests=25, seconds=1),
    "massive": VendorQuota(requests=5, seconds=60),
    "stocktwits": VendorQuota(requests=180, seconds=3600),
}
"""What the desk asks of each metered data vendor: under what its documentation allows (the
SEC 10 a second, FRED 120 a minute), since a request reaches the vendor a little after its
turn (a busy worker's thread may be late), and the vendor counts arrivals."""

EDGAR_IDENTITY_ENV = "EDGAR_IDENTITY"


class SecSettings(BaseModel):
    """SEC EDGAR's JSON APIs and filings (no key; the SEC asks every client to name a contact
    in its User-Agent, and allows 10 requests a second)."""

    identity: str | None = Field(
        None,
        description=f"who calls, as the SEC asks: 'Name email@example.com' (default: "
        f"${EDGAR_IDENTITY_ENV})",
    )
    data_url: str = Field("https://data.sec.gov", description="companyfacts and submissions")
    www_url: str = Field("https://www.sec.gov", description="the ticker list and the filings")
    timeout_seconds: float = Field(10, gt=0, le=120, description="one HTTP call's limit")

    @model_validator(mode="before")
    @classmethod
    def _identity_from_edgars_variable(cls, data: object) -> object:
        """``EDGAR_IDENTITY``, as edgartools reads it, when no identity is given."""
        return _from_vendor_variables(data, {"identity": EDGAR_IDENTITY_ENV})


class AlpacaSettings(BaseModel):
    """The Alpaca Trading API: where it is, how long one call may take, and the key pair.

    The keys are read from Alpaca's own variables, ``APCA_API_KEY_ID`` and
    ``APCA_API_SECRET_KEY``, when not given; they are ``SecretStr`` so no repr, log
    line or error message can show them.
    """

    base_url: str = Field(
        ALPACA_PAPER_URL, description="the Trading API; the paper one unless `live` is set"
    )
    live: bool = Field(
        False,
        description="trade with real money: the live URL replaces the paper default "
        "(a base_url set to anything else is kept)",
    )
    timeout_seconds: float = Field(
        10, gt=0, le=300, description="connect and read timeout of one HTTP call"
    )
    key_id: SecretStr | None = Field(None, description=f"default: ${ALPACA_KEY_ID_ENV}")
    secret_key: SecretStr | None = Field(None, description=f"default: ${ALPACA_SECRET_KEY_ENV}")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError("give the URL with its scheme, e.g. https://paper-api.alpaca.markets")
        return value

    @model_validator(mode="before")
    @classmethod
    def _keys_from_alpacas_variables(cls, data: object) -> object:
        """Alpaca's own variables, as its SDKs and CLI read them, when no key is given."""
        return _from_vendor_variables(
            data, {"key_id": ALPACA_KEY_ID_ENV, "secret_key": ALPACA_SECRET_KEY_ENV}
        )

    @property
    def url(self) -> str:
        """The URL calls go to: the live one when ``live`` and base_url is the paper default."""
        if self.live and self.base_url.rstrip("/") == ALPACA_PAPER_URL:
            return ALPACA_LIVE_URL
        return self.base_url.rstrip("/")

    def trading_mode(self) -> str:
        """What orders sent here are, in a sentence for people: LIVE TRADING with real money,
        or paper trading."""
        if self.live:
            return (
                f"LIVE TRADING: the broker worker sends orders with real money to {self.url} "
                "(QUANTDESK_ALPACA__LIVE=true)."
            )
        return (
            f"paper trading: the broker worker sends orders to Alpaca's paper account at "
            f"{self.url}, no real money."
        )

    @property
    def has_keys(self) -> bool:
        """Whether both keys are set here (on a broker worker; rarely elsewhere)."""
        return all(
            key is not None and key.get_secret_value() for key in (self.key_id, self.secret_key)
        )

    def keys(self) -> tuple[str, str]:
        """The key id and secret, or a ``ConfigError`` naming both variables."""
        key_id = self.key_id.get_secret_value() if self.key_id else ""
        secret = self.secret_key.get_secret_value() if self.secret_key else ""
        if not key_id or not secret:
            missing = [
                variable
                for value, variable in (
                    (key_id, ALPACA_KEY_ID_ENV),
                    (secret, ALPACA_SECRET_KEY_ENV),
                )
                if not value
            ]
            raise ConfigError(
                " and ".join(missing),
                "no Alpaca key pair",
                fix=f"Set {ALPACA_KEY_ID_ENV} and {ALPACA_SECRET_KEY_ENV} to a key pair of "
                f"the account at {self.url} (paper keys for paper-api, live keys for api).",
            )
        return key_id, secret


def _default_broker_limits() -> BrokerLimits:
    return BrokerLimits(max_order_notional=Decimal(10_000), max_daily_notional=Decimal(50_000))


class Settings(_ProviderBlocks):
    """Everything a quantdesk process can be configured with: the fields below, and one
    ``ProviderSettings`` block per provider row (``settings.provider(name)``)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
    )

    data_dir: Path = Field(Path(".quantdesk"), description="pid, log, database and S3 files")
    host_name: str = Field(
        default_factory=socket.gethostname,
        min_length=1,
        max_length=200,
        description="this host in each worker's identity (`<pid>@<host> <role>`), so `quantdesk "
        "status` tells hosts apart; set it where hosts share a hostname (containers, network "
        "namespaces)",
    )
    database_url: str | None = Field(None, description="SQLAlchemy URL; default SQLite in data_dir")
    temporal: TemporalSettings = TemporalSettings()
    console: ConsoleSettings = ConsoleSettings()
    mcp: McpSettings = McpSettings()
    metrics: MetricsSettings = MetricsSettings()
    otel: OtelSettings = OtelSettings()
    codec: CodecSettings = CodecSettings()
    s3: S3Settings = S3Settings()
    queues: TaskQueues = TaskQueues()
    default_provider: str = "offline"
    local_llm: LocalLlmSettings = LocalLlmSettings()
    alpaca: AlpacaSettings = Field(
        default_factory=AlpacaSettings,
        description="the Alpaca Trading API (QUANTDESK_ALPACA__*; keys from APCA_API_*)",
    )

    data_routes: Annotated[dict[DataKind, list[str]], NoDecode] = Field(
        default_factory=dict,
        description=(
            'your vendors per data kind, in order; JSON like {"news": ["local", "yfinance", '
            '"sim"]}; a kind not given takes the default chain of the vendors set up '
            "(`quantdesk data check` shows the chains in use)"
        ),
    )
    data_seed: int = Field(7, description="seed of the simulated market (the sim vendor)")
    data_quotas: dict[str, VendorQuota] = Field(
        default_factory=lambda: dict(DEFAULT_QUOTAS),
        description='requests each data vendor allows the whole desk, JSON like {"fred": '
        '{"requests": 120, "seconds": 60}}, merged over the defaults',
    )
    sec: SecSettings = Field(
        default_factory=SecSettings,
        description="SEC EDGAR (QUANTDESK_SEC__*; the contact from EDGAR_IDENTITY)",
    )
    fred: FredSettings = Field(
        default_factory=FredSettings,
        description="FRED / ALFRED (QUANTDESK_FRED__*; the key from FRED_API_KEY)",
    )
    finnhub: FinnhubSettings = Field(
        default_factory=FinnhubSettings,
        description="Finnhub (QUANTDESK_FINNHUB__*; the key from FINNHUB_API_KEY)",
    )
    massive: MassiveSettings = Field(
        default_factory=MassiveSettings,
        description="Massive, formerly Polygon (QUANTDESK_MASSIVE__*; the key from MASSIVE_API_KEY)",
    )
    stocktwits: StocktwitsSettings = Field(
        default_factory=StocktwitsSettings,
        description="StockTwits' public streams (QUANTDESK_STOCKTWITS__*; no key)",
    )
    ccxt: CcxtSettings = Field(
        default_factory=CcxtSettings, description="ccxt's crypto exchange (QUANTDESK_CCXT__*)"
    )
    notify: NotifySettings = Field(
        default_factory=NotifySettings,
        description="notices to people (QUANTDESK_NOTIFY__URLS, __ROUTES, __ESCALATE_URLS, "
        "__REMIND_AFTER)",
    )
    budget: BudgetSettings = Field(
        default_factory=BudgetSettings,
        description="daily spending limits per book (QUANTDESK_BUDGET__DAILY_USD, __DAILY_TOKENS)",
    )
    language: str | None = Field(
        None,
        max_length=LANGUAGE_MAX,
        pattern=LANGUAGE_PATTERN,
        description="the language agents write prose in when a run names none (default: "
        "English); enums, tickers and numbers stay as they are",
    )
    data_cache: bool = Field(True, description="keep network vendors' answers in data_dir")
    broker_limits: BrokerLimits = Field(
        default_factory=_default_broker_limits,
        description=(
            "the guardrails every order to a real broker passes on the broker worker: "
            "QUANTDESK_BROKER_LIMITS__MAX_ORDER_NOTIONAL, __MAX_DAILY_NOTIONAL, __SYMBOLS"
        ),
    )
    paper_costs: Costs = Field(
        default_factory=Costs,
        description=(
            "the paper broker's fee_bps, fee_min and slippage_bps, e.g. "
            "QUANTDESK_PAPER_COSTS__FEE_BPS=2; a Portfolio run may override them"
        ),
    )
    retry_budget_minutes: int = Field(
        60,
        ge=1,
        le=7 * 24 * 60,
        description="how long a workflow step keeps retrying a transient fault (S3, SQL, a "
        "vendor's 5xx or 429, a timeout) before it fails; read by the workflows worker",
    )
    llm_cache: bool = Field(
        False,
        description="answer a repeated LLM request from the reply cache in S3 "
        "(shared/llm/reply_cache.py); never the offline provider",
    )
    inline_max_bytes: int = Field(
        2048,
        ge=0,
        description="larger tool answers, and Temporal payloads of this size or more (once "
        "compressed), travel as claims on objects in the payloads bucket, read back by the "
        "activity, the worker or the client that needs them (shared/storage/claim_check.py, "
        "workers/payload_storage.py)",
    )
    payload_compression: bool = Field(
        True,
        description="compress Temporal payloads of inline_max_bytes or more, so that most "
        "travel inline instead of through S3 (workers/payload_compression.py); false while "
        "workers or clients of a quantdesk older than this setting still read the histories",
    )
    claims_retention_days: int = Field(
        30,
        ge=1,
        description="`quantdesk storage prune` deletes claimed objects last written longer ago "
        "than this that no run still running, or closed since, holds (cli/storage.py)",
    )
    prices: dict[str, ModelPrice] = Field(
        default_factory=list_prices,
        description='USD per million tokens per model, JSON like {"gpt-4.1": {"input": 2, '
        '"output": 8}}, merged over the defaults',
    )

    @model_validator(mode="before")
    @classmethod
    def _over_provider_defaults(cls, data: object) -> object:
        """A provider block given in part (one variable, a dict) keeps the rest of its row's
        serving limits: without this, setting QUANTDESK_LLAMACPP__BASE_URL alone would reset
        the local model's 900 s timeout and single slot to the generic 120 s and 8."""
        if not isinstance(data, dict):
            return data
        merged = dict(data)
        for name in PROVIDERS.keys() & data.keys():
            if isinstance(data[name], dict):
                merged[name] = {**PROVIDERS[name].serving.model_dump(), **data[name]}
        return merged

    @field_validator("prices", mode="after")
    @classmethod
    def _over_default_prices(cls, value: dict[str, ModelPrice]) -> dict[str, ModelPrice]:
        return {**list_prices(), **value}

    @field_validator("data_quotas", mode="after")
    @classmethod
    def _over_default_quotas(cls, value: dict[str, VendorQuota]) -> dict[str, VendorQuota]:
        return {**DEFAULT_QUOTAS, **value}

    def price_of(self, model: str) -> ModelPrice | None:
        """The configured price of ``model``, if it has one."""
        return self.prices.get(model)

    @field_validator("data_routes", mode="before")
    @classmethod
    def _known_routes(cls, value: object) -> object:
        """JSON or a mapping; unknown kinds or vendors are named."""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as error:
                raise ValueError(f"not valid JSON ({error})") from None
        if not isinstance(value, dict) or not all(
            isinstance(chain, list | tuple) for chain in value.values()
        ):
            raise ValueError(
                'expected an object of kind -> list of vendors, e.g. {"news": ["sim"]}'
            )
        kinds = [kind.value for kind in DataKind]
        unknown_kinds = sorted(str(kind) for kind in value if str(kind) not in kinds)
        if unknown_kinds:
            raise ValueError(
                f"unknown data kind(s) {', '.join(unknown_kinds)}; accepted: {', '.join(kinds)}"
            )
        unknown = sorted({str(n) for chain in value.values() for n in chain} - set(VENDORS))
        if unknown:
            raise ValueError(
                f"unknown data vendor(s) {', '.join(unknown)}; accepted: {', '.join(VENDORS)}"
            )
        return value

    @field_validator("host_name")
    @classmethod
    def _one_word(cls, value: str) -> str:
        """The identity is split on spaces to find the host again."""
        if len(value.split()) != 1 or value != value.strip():
            raise ValueError("give the host's name as one word without spaces, e.g. host-b")
        return value

    @field_validator("default_provider")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        if value not in PROVIDERS:
            raise ValueError(f"unknown provider; accepted: {', '.join(PROVIDERS)}")
        return value

    @cached_property
    def resolved_database_url(self) -> str:
        """The configured URL, or a SQLite file in the data directory."""
        return self.database_url or f"sqlite:///{(self.data_dir / 'quantdesk.db').resolve()}"

    def provider(self, name: str) -> ProviderSettings:
        """The settings block of one registry provider."""
        value = getattr(self, name, None) if name in PROVIDERS else None
        if not isinstance(value, ProviderSettings):
            raise ConfigError(
                f"{ENV_PREFIX}{name.upper()}",
                f"no settings block for provider {name!r}",
                fix="Name a row of PROVIDERS in shared/llm/providers.py; its block is made "
                "from the rows there when shared.config is imported.",
            )
        return value

    def context_window(self, spec: ProviderSpec) -> ContextWindow | None:
        """The context window to plan ``spec``'s prompts for, and the variable that sets it:
        the provider's setting, the embedded server's, the row's. None: large, never trimmed."""
        own = provider_setting(spec.name, "context_tokens")
        tokens = self.provider(spec.name).context_tokens
        if tokens is not None:
            return ContextWindow(tokens, own)
        if spec.embedded and not self._url_configured(spec):
            return ContextWindow(
                self.local_llm.context_tokens, f"{ENV_PREFIX}LOCAL_LLM__CONTEXT_TOKENS"
            )
        tokens = spec.capabilities.context_tokens
        return None if tokens is None else ContextWindow(tokens, own)

    def model_for(self, spec: ProviderSpec, role: LlmRole) -> str | None:
        """The model a role uses on a provider: the setting, else the registry default."""
        own = self.provider(spec.name)
        configured = {
            LlmRole.QUICK: own.quick_model,
            LlmRole.DEEP: own.deep_model,
            LlmRole.VISION: own.vision_model,
        }[role]
        default = {
            LlmRole.QUICK: spec.quick_model,
            LlmRole.DEEP: spec.deep_model,
            LlmRole.VISION: spec.vision_model,
        }[role]
        if configured or default:
            return configured or default
        return own.default_model if isinstance(own, LangChainSettings) else None

    def api_key(self, spec: ProviderSpec) -> str | None:
        """The provider's key: the quantdesk setting, else the vendor's standard variable."""
        own = self.provider(spec.name).api_key
        if own is not None and own.get_secret_value():
            return own.get_secret_value()
        return os.environ.get(spec.key_env) if spec.key_env else None

    def _url_configured(self, spec: ProviderSpec) -> str | None:
        own = self.provider(spec.name).base_url
        vendor = os.environ.get(spec.base_url_env) if spec.base_url_env else None
        return own or vendor

    def can_answer(self, spec: ProviderSpec) -> bool:
        """Whether ``spec``'s calls could be answered as configured: offline always, a vendor
        with its key, a keyless server once it has a URL (or, for the embedded row, a local
        model). A default URL alone (a local server that may not run) does not count."""
        if spec.client is ClientKind.OFFLINE:
            return True
        if spec.client is ClientKind.LANGCHAIN:
            return self.chat_class(spec) is not None
        if spec.key_required:
            return bool(self.api_key(spec))
        local = spec.embedded and self.local_llm.model is not None
        return bool(self._url_configured(spec) or self.api_key(spec) or local)

    def chat_class(self, spec: ProviderSpec) -> str | None:
        """The LangChain class a langchain row is served by; None when unset or not such a row."""
        own = self.provider(spec.name)
        return own.chat_class if isinstance(own, LangChainSettings) else None

    def langchain_block(self, spec: ProviderSpec) -> LangChainSettings:
        """The settings block of a langchain row (its class and keyword arguments)."""
        own = self.provider(spec.name)
        if not isinstance(own, LangChainSettings):
            raise ConfigError(
                provider_setting(spec.name, "class"),
                f"provider {spec.name!r} is not a langchain row",
                fix="Name a LangChain class only for a row whose client is langchain.",
            )
        return own

    def base_url(self, spec: ProviderSpec) -> str | None:
        """The provider's URL: the setting, the vendor's variable, the embedded server for a
        row it serves, then the registry default."""
        embedded = self.local_llm.url if spec.embedded else None
        return self._url_configured(spec) or embedded or spec.default_base_url

    def payload_keys(self) -> PayloadKeys | None:
        """The keys payloads are encrypted with, None when they travel in plain text (the
        embedded cluster, unless ``codec.enabled``); a ``ConfigError`` when on without keys."""
        return self.codec.ring(embedded=self.temporal.embedded)

    @property
    def web_ui_origins(self) -> list[str]:
        """The origins whose pages may call the console's codec endpoint."""
        if self.codec.web_ui_origins is not None:
            return self.codec.web_ui_origins
        port = self.temporal.ui_port
        return [f"http://127.0.0.1:{port}", f"http://localhost:{port}"]

    def s3_credentials(self) -> tuple[str, str]:
        """Access and secret key: from settings, else the file `up` generated, else an error."""
        if self.s3.access_key and self.s3.secret_key:
            return self.s3.access_key.get_secret_value(), self.s3.secret_key.get_secret_value()
        from shared.storage.credentials import read_generated_credentials

        generated = read_generated_credentials(self.data_dir)
        if generated is None:
            raise ConfigError(
                f"{ENV_PREFIX}S3__ACCESS_KEY",
                "no S3 credentials",
                fix=(
                    f"Set {ENV_PREFIX}S3__ACCESS_KEY and {ENV_PREFIX}S3__SECRET_KEY, "
                    "or run `quantdesk up` once to generate them for the embedded server."
                ),
            )
        return generated


def _describe(error: ValidationError) -> str:
    """One line per bad variable, naming it as the user would type it."""
    lines = []
    for item in error.errors():
        path = "__".join(str(part) for part in item["loc"]).upper()
        # Never echo what was given for a key, a class's arguments, or a whole block (each
        # may hold one): it may be a real secret.
        given = item.get("input")
        secret = "KEY" in path or "KWARGS" in path or isinstance(given, dict | BaseModel)
        got = "" if secret else f" (got {given!r})"
        lines.append(f"{ENV_PREFIX}{path}: {item['msg']}{got}")
    return "; ".join(lines)


def load_settings(**overrides: object) -> Settings:
    """Read settings, turning a validation failure into one clear ``ConfigError``."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as error:
        raise ConfigError("environment", _describe(error)) from None
    except SettingsError as error:  # a JSON setting that does not parse (its text not echoed)
        raise ConfigError(
            "environment", str(error), fix="Give the variable as valid JSON, or unset it."
        ) from None
