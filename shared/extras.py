"""quantdesk's optional extras: which one brings a module, and the command that installs it.

The README's quick start installs ``.[local]``; the MCP server, the local model, PostgreSQL,
live data and Parquet files each need an extra beyond it. A command that meets a missing one
says which extra and the exact command for this environment, instead of a traceback
(``cli.main``); the places that check for a package first word their fix with
``install_command`` too, so every door says the same.
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

DISTRIBUTION = "quantdesk"

EXTRA_OF_MODULE: dict[str, str] = {
    "mcp": "mcp",
    "fastapi": "console",
    "uvicorn": "console",
    "jinja2": "console",
    "multipart": "console",
    "python_multipart": "console",
    "markdown_it": "console",
    "xllamacpp": "local-llm",
    "psycopg": "postgres",
    "yfinance": "online",
    "ccxt": "crypto",
    "pyarrow": "parquet",
}
"""Top-level module → the extra of ``pyproject.toml`` that installs it."""


def extra_of(module: str | None) -> str | None:
    """The extra that brings ``module`` (a dotted name counts by its top level), if any."""
    if not module:
        return None
    return EXTRA_OF_MODULE.get(module.partition(".")[0])


def _editable_source() -> Path | None:
    """The folder quantdesk is installed from in editable mode (a clone), if it is."""
    # Every copy of the metadata on the path: run from a clone, its build's egg-info (which
    # records no origin) may come before the installed dist-info.
    for found in metadata.distributions(name=DISTRIBUTION):
        recorded = found.read_text("direct_url.json")
        origin = json.loads(recorded) if recorded else {}
        if origin.get("dir_info", {}).get("editable"):
            return Path(unquote(urlparse(origin["url"]).path))
    return None


def install_command(extra: str) -> str:
    """The command that adds ``extra`` to this environment: by this interpreter's pip, from the
    clone quantdesk was installed from (``-e``) when it was, else from the package index."""
    pip = f"{sys.executable} -m pip install"
    source = _editable_source()
    if source is not None:
        return f"{pip} -e '{source}[{extra}]'"
    return f"{pip} '{DISTRIBUTION}[{extra}]'"
