"""The one ``Settings`` model, assembled from the blocks of this package and one block per
provider row, with what it answers about providers, and ``load_settings``, which reads it."""

from __future__ import annotations

import json
import os
import socket
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pydantic import (
    BaseModel,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from shared.broker.guardrails import BrokerLimits
from shared.config.broker import AlpacaSettings, default_broker_limits
from shared.config.codec import CodecSettings
from shared.config.llm import (
    BudgetSettings,
    ContextWindow,
    LangChainSettings,
    LocalLlmSettings,
    ProviderSettings,
    settings_block_of,
)
from shared.config.notify import NotifySettings
from shared.config.stack import (
    ConsoleSettings,
    McpSettings,
    MetricsSettings,
    OtelSettings,
    S3Settings,
    TaskQueues,
    TemporalSettings,
)
from shared.config.variables import ENV_PREFIX, provider_setting
from shared.config.vendors import (
    DEFAULT_QUOTAS,
    CcxtSettings,
    FinnhubSettings,
    FredSettings,
    MassiveSettings,
    SecSettings,
    StocktwitsSettings,
    VendorQuota,
)
from shared.data.contracts import DataKind
from shared.data.factory import VENDORS
from shared.errors import ConfigError
from shared.llm.pricing import ModelPrice
from shared.llm.providers import PROVIDERS, ClientKind, LlmRole, ProviderSpec, list_prices
from shared.payload_keys import PayloadKeys
from shared.portfolio.costs import Costs

LANGUAGE_PATTERN = r"^[^\W\d_][^\W\d_ ()-]*(?:[ -][^\W\d_()]+)*(?: \([^()]{1,30}\))?$"
"""A language's name or code as people write it: ``German``, ``de``, ``Brazilian Portuguese``,
``Deutsch``, ``zh-Hans``, ``Chinese (Simplified)``; never an instruction of its own."""
LANGUAGE_MAX = 40


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
        default_factory=default_broker_limits,
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
    workflow_sandbox: bool = Field(
        False,
        description="run workflow code in Temporal's sandbox, which refuses a non-deterministic "
        "call (the clock, randomness, the environment) at run time; it costs the workflows "
        "worker about a sixth of a 100-name desk's throughput here, so it is off, and the "
        "tests run every recorded history and an offline AutoRun under it (docs/light-desk.md); "
        "read by the workflows worker",
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
