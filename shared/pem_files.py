"""Setting types for PEM files (CA bundles, certificates, private keys), checked at load.

A TLS library handed a missing or wrong file reports it late and vaguely: Temporal's
client, given a CA file that is not PEM, silently trusts nothing and then calls the
server's certificate "UnknownIssuer". Checking that the file exists and holds the
expected PEM block turns that into an error naming the variable, when settings load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator


def _holding(label: str, what: str) -> AfterValidator:
    """A check that the path is a readable file with a ``-----BEGIN ...<label>-----`` block."""

    def check(path: Path) -> Path:
        try:
            text = path.read_text(errors="replace")
        except FileNotFoundError:
            raise ValueError(f"no file at {path}: give the path of {what}") from None
        except OSError as error:
            raise ValueError(f"cannot read {path} ({error.strerror}): give {what}") from None
        if not any(
            line.startswith("-----BEGIN ") and line.rstrip().endswith(f"{label}-----")
            for line in text.splitlines()
        ):
            raise ValueError(f"{path} holds no PEM {label.lower()}: give {what}")
        return path

    return AfterValidator(check)


CertificateFile = Annotated[
    Path, _holding("CERTIFICATE", "a PEM file of certificates (-----BEGIN CERTIFICATE-----)")
]
"""A PEM file of one or more certificates: a CA bundle, or a certificate and its chain."""
PrivateKeyFile = Annotated[
    Path, _holding("PRIVATE KEY", "a PEM private key (-----BEGIN ... PRIVATE KEY-----)")
]
"""A PEM private key, unencrypted (PKCS#8, PKCS#1 or SEC1)."""
