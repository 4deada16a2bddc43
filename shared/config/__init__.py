"""The one settings model, read from ``QUANTDESK_*`` variables and ``.env``.

Nested values use a double underscore: ``QUANTDESK_OPENAI__QUICK_MODEL``. The
vendors' own variables (``OPENAI_API_KEY``, ``ANTHROPIC_BASE_URL``,
``DASHSCOPE_API_KEY``, ``OLLAMA_BASE_URL``...) are honoured as fallbacks, so a
user's existing shell set-up just works. Settings are read by workers and the
CLI only; workflows never read the environment.

The model is assembled in ``shared.config.settings`` from one module per settings block
(models, stack, codec, data vendors, notices, broker); every name is imported from here.
"""

from __future__ import annotations

from shared.config.broker import (
    ALPACA_KEY_ID_ENV,
    ALPACA_LIVE_URL,
    ALPACA_PAPER_URL,
    ALPACA_SECRET_KEY_ENV,
    AlpacaSettings,
)
from shared.config.codec import (
    CODEC_ENABLED_SETTING,
    CODEC_KEY_FILE_SETTING,
    CODEC_KEYS_SETTING,
    CODEC_ORIGINS_SETTING,
    CodecSettings,
)
from shared.config.llm import (
    MODEL_KWARGS,
    BudgetSettings,
    ContextWindow,
    LangChainSettings,
    LocalLlmSettings,
    ProviderSettings,
    settings_block_of,
)
from shared.config.notify import AppriseUrls, NotifySettings
from shared.config.settings import LANGUAGE_MAX, LANGUAGE_PATTERN, Settings, load_settings
from shared.config.stack import (
    MCP_APPROVE_SETTING,
    MCP_TOKEN_SETTING,
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
    EDGAR_IDENTITY_ENV,
    FINNHUB_KEY_ENV,
    FRED_KEY_ENV,
    FRED_URL,
    MASSIVE_KEY_ENV,
    CcxtSettings,
    FinnhubSettings,
    FredSettings,
    MassiveSettings,
    SecSettings,
    StocktwitsSettings,
    VendorQuota,
)

__all__ = [
    "ALPACA_KEY_ID_ENV",
    "ALPACA_LIVE_URL",
    "ALPACA_PAPER_URL",
    "ALPACA_SECRET_KEY_ENV",
    "CODEC_ENABLED_SETTING",
    "CODEC_KEYS_SETTING",
    "CODEC_KEY_FILE_SETTING",
    "CODEC_ORIGINS_SETTING",
    "DEFAULT_QUOTAS",
    "EDGAR_IDENTITY_ENV",
    "ENV_PREFIX",
    "FINNHUB_KEY_ENV",
    "FRED_KEY_ENV",
    "FRED_URL",
    "LANGUAGE_MAX",
    "LANGUAGE_PATTERN",
    "MASSIVE_KEY_ENV",
    "MCP_APPROVE_SETTING",
    "MCP_TOKEN_SETTING",
    "MODEL_KWARGS",
    "AlpacaSettings",
    "AppriseUrls",
    "BudgetSettings",
    "CcxtSettings",
    "CodecSettings",
    "ConsoleSettings",
    "ContextWindow",
    "FinnhubSettings",
    "FredSettings",
    "LangChainSettings",
    "LocalLlmSettings",
    "MassiveSettings",
    "McpSettings",
    "MetricsSettings",
    "NotifySettings",
    "OtelSettings",
    "ProviderSettings",
    "S3Settings",
    "SecSettings",
    "Settings",
    "StocktwitsSettings",
    "TaskQueues",
    "TemporalSettings",
    "VendorQuota",
    "load_settings",
    "provider_setting",
    "settings_block_of",
]
