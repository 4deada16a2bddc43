"""How settings are named in the environment: the ``QUANTDESK_`` prefix, a provider's
variable, and the vendors' own variables a block falls back to."""

from __future__ import annotations

import os

ENV_PREFIX = "QUANTDESK_"


def provider_setting(provider: str, field: str) -> str:
    """The variable of one provider setting, e.g. ``QUANTDESK_QWEN__QUICK_MODEL``."""
    return f"{ENV_PREFIX}{provider.upper()}__{field.upper()}"


def from_vendor_variables(data: object, variables: dict[str, str]) -> object:
    """``data`` with each field of ``variables`` not given taken from the vendor's own
    environment variable (``FRED_API_KEY``), as the vendor's SDKs read it."""
    if not isinstance(data, dict):
        return data
    merged = dict(data)
    for field, variable in variables.items():
        if merged.get(field) is None and os.environ.get(variable):
            merged[field] = os.environ[variable]
    return merged
