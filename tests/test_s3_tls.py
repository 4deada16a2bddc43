"""The object store over HTTPS (nginx in front of the real test S3): objects round-trip with
the CA bundle of ``QUANTDESK_S3__CA_FILE``; a certificate the client does not trust, and
HTTPS to a plain endpoint, fail for good naming the variable to change."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from shared.config import Settings, load_settings
from shared.errors import StorageConfigError
from shared.storage.buckets import CHARTS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore
from tests.certificates import TlsFiles, make_tls_files
from tests.tls_proxy import https_proxy

REF = ObjectRef(bucket=CHARTS_BUCKET, key="tls/run/chart.png", content_type="image/png")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def https_endpoint(
    tmp_path_factory: pytest.TempPathFactory, files: TlsFiles, s3_settings: Settings
) -> Iterator[str]:
    """``host:port`` of HTTPS in front of the session's S3."""
    with https_proxy(tmp_path_factory.mktemp("nginx"), files, s3_settings.s3.endpoint) as address:
        yield address


def _over(s3_settings: Settings, **s3: Any) -> Settings:
    """The session's S3 settings (its credentials too) with ``s3`` over them."""
    access, secret = s3_settings.s3_credentials()
    given = {"access_key": access, "secret_key": secret, **s3}
    return load_settings(s3={**s3_settings.s3.model_dump(), **given})


def test_objects_round_trip_over_https_with_the_ca_file(
    s3_settings: Settings, https_endpoint: str, files: TlsFiles
) -> None:
    settings = _over(s3_settings, endpoint=https_endpoint, ca_file=str(files.ca))
    store = ObjectStore.from_settings(settings)

    store.put_bytes(REF, b"\x89PNG over TLS")

    assert settings.s3.secure
    assert store.get_bytes(REF) == b"\x89PNG over TLS"


@pytest.mark.parametrize("trusting", ["the system's CAs", "another CA"])
def test_a_certificate_the_client_does_not_trust_names_ca_file(
    s3_settings: Settings, https_endpoint: str, files: TlsFiles, trusting: str
) -> None:
    trust = {"ca_file": str(files.other_ca)} if trusting == "another CA" else {"secure": True}
    store = ObjectStore.from_settings(_over(s3_settings, endpoint=https_endpoint, **trust))

    with pytest.raises(StorageConfigError) as caught:
        store.put_bytes(REF, b"never sent")

    assert not caught.value.retryable
    assert str(caught.value) == (
        f"S3 at {https_endpoint} presented a certificate the client does not trust "
        "(unable to get local issuer certificate). Set QUANTDESK_S3__CA_FILE to the PEM bundle "
        "of the CA that signed it (unset, only the system's CAs are trusted), and "
        "QUANTDESK_S3__ENDPOINT to a name the certificate carries."
    )


def test_https_to_a_plain_endpoint_names_secure(s3_settings: Settings, files: TlsFiles) -> None:
    store = ObjectStore.from_settings(_over(s3_settings, ca_file=str(files.ca)))

    with pytest.raises(StorageConfigError) as caught:
        store.get_bytes(REF)

    assert str(caught.value) == (
        f"S3 at {s3_settings.s3.endpoint} does not answer HTTPS (it speaks plain HTTP). "
        "Unset QUANTDESK_S3__SECURE and QUANTDESK_S3__CA_FILE, or set QUANTDESK_S3__ENDPOINT "
        "to the server's HTTPS port."
    )
