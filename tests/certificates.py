"""Throwaway certificates for the TLS tests: a CA the clients trust, the server and client
certificates it signs, and a second CA nobody trusts with a client certificate of its own.

Everything is made fresh per call (EC P-256 keys: fast), written as PEM files, and valid
for a day: tests never depend on a certificate made elsewhere or one that can expire
under them.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVER_DNS_NAME = "temporal.quantdesk.test"
"""The DNS name every server certificate carries beside its IP addresses."""
VALIDITY = timedelta(days=1)


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key, as PEM files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class TlsFiles:
    """The PEM files of one test: the trusted CA and what it signed, and an untrusted pair."""

    ca: Path
    """The CA clients trust (``ca_file``) and the server checks client certificates with."""
    server: Issued
    """Signed by ``ca``, for ``SERVER_DNS_NAME``, 127.0.0.1 and the extra IPs asked for."""
    client: Issued
    """Signed by ``ca``: accepted under mTLS."""
    other_ca: Path
    """A CA nobody trusts: a client that trusts only it rejects the server."""
    other_client: Issued
    """Signed by ``other_ca``: refused under mTLS."""


@dataclass(frozen=True)
class _Authority:
    """A CA's name and key, to sign with."""

    name: x509.Name
    key: ec.EllipticCurvePrivateKey


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey
) -> x509.CertificateBuilder:
    now = datetime.now(UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def _write_cert(path: Path, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)
    return path


def _authority(folder: Path, stem: str) -> tuple[_Authority, Path]:
    """A self-signed CA, and the file of its certificate."""
    key = _new_key()
    name = _name(f"quantdesk test {stem}")
    cert = (
        _builder(name, name, key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return _Authority(name, key), _write_cert(folder / f"{stem}.pem", cert)


def _issue(
    folder: Path,
    stem: str,
    authority: _Authority,
    *,
    usage: x509.ObjectIdentifier,
    names: Sequence[x509.GeneralName],
) -> Issued:
    """A leaf certificate for ``names`` signed by ``authority``, with its key."""
    key = _new_key()
    builder = (
        _builder(_name(f"quantdesk test {stem}"), authority.name, key)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(authority.key, hashes.SHA256())
    return Issued(
        cert=_write_cert(folder / f"{stem}.pem", cert),
        key=_write_key(folder / f"{stem}-key.pem", key),
    )


def make_tls_files(folder: Path, *, server_ips: Sequence[str] = ()) -> TlsFiles:
    """Fresh CAs and certificates in ``folder``; the server's is valid for
    ``SERVER_DNS_NAME``, 127.0.0.1 and each of ``server_ips`` (another host's address)."""
    folder.mkdir(parents=True, exist_ok=True)
    trusted, ca = _authority(folder, "ca")
    untrusted, other_ca = _authority(folder, "other-ca")
    addresses = dict.fromkeys(["127.0.0.1", *server_ips])
    server_names: list[x509.GeneralName] = [x509.DNSName(SERVER_DNS_NAME)]
    server_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in addresses]
    client = ExtendedKeyUsageOID.CLIENT_AUTH
    return TlsFiles(
        ca=ca,
        server=_issue(
            folder, "server", trusted, usage=ExtendedKeyUsageOID.SERVER_AUTH, names=server_names
        ),
        client=_issue(folder, "client", trusted, usage=client, names=[]),
        other_ca=other_ca,
        other_client=_issue(folder, "other-client", untrusted, usage=client, names=[]),
    )
