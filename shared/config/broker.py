"""The real broker's settings: the Alpaca Trading API and its key pair, and the default
guardrails every order to a real broker passes."""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator

from shared.broker.guardrails import BrokerLimits
from shared.config.variables import from_vendor_variables
from shared.errors import ConfigError

ALPACA_PAPER_URL = "https://paper-api.alpaca.markets"
ALPACA_LIVE_URL = "https://api.alpaca.markets"
ALPACA_KEY_ID_ENV = "APCA_API_KEY_ID"
ALPACA_SECRET_KEY_ENV = "APCA_API_SECRET_KEY"


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
        return from_vendor_variables(
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


def default_broker_limits() -> BrokerLimits:
    """The guardrails of a real broker's orders when none are configured."""
    return BrokerLimits(max_order_notional=Decimal(10_000), max_daily_notional=Decimal(50_000))
