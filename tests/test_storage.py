"""The object store against a real S3 server (SeaweedFS)."""

from __future__ import annotations

import urllib.request

import pytest

from shared.config import Settings
from shared.errors import ObjectNotFound, StorageConfigError, StorageUnavailable
from shared.storage.buckets import CHARTS_BUCKET, PAYLOADS_BUCKET, REPORTS_BUCKET
from shared.storage.objects import ObjectRef, ObjectStore


def test_put_then_get_returns_the_same_bytes_and_type(s3_settings: Settings) -> None:
    store = ObjectStore.from_settings(s3_settings)
    ref = ObjectRef(bucket=CHARTS_BUCKET, key="wf-1/run-1/chart.png", content_type="image/png")

    store.put_bytes(ref, b"\x89PNG fake bytes")

    assert store.get_bytes(ref) == b"\x89PNG fake bytes"
    assert store.exists(ref)


def test_put_twice_overwrites_so_retries_leave_one_object(s3_settings: Settings) -> None:
    store = ObjectStore.from_settings(s3_settings)
    ref = ObjectRef(bucket=PAYLOADS_BUCKET, key="wf-2/run/step")

    store.put_bytes(ref, b"first")
    store.put_bytes(ref, b"second")

    assert store.get_bytes(ref) == b"second"


def test_presigned_url_serves_the_object_without_credentials(s3_settings: Settings) -> None:
    store = ObjectStore.from_settings(s3_settings)
    ref = ObjectRef(bucket=REPORTS_BUCKET, key="wf-3/report.md", content_type="text/markdown")
    store.put_bytes(ref, b"# report")

    with urllib.request.urlopen(store.presigned_url(ref), timeout=10) as response:
        assert response.read() == b"# report"
        assert response.headers["Content-Type"] == "text/markdown"


def test_missing_key_is_not_found_and_does_not_exist(s3_settings: Settings) -> None:
    store = ObjectStore.from_settings(s3_settings)
    ref = ObjectRef(bucket=CHARTS_BUCKET, key="never/written")

    assert not store.exists(ref)
    with pytest.raises(ObjectNotFound, match="never/written"):
        store.get_bytes(ref)


def test_bad_credentials_are_permanent_and_name_the_settings(s3_settings: Settings) -> None:
    access, _ = s3_settings.s3_credentials()
    store = ObjectStore(s3_settings.s3.endpoint, access, "wrong-secret")

    with pytest.raises(StorageConfigError) as caught:
        store.get_bytes(ObjectRef(bucket=CHARTS_BUCKET, key="x"))

    assert not caught.value.retryable
    assert "QUANTDESK_S3__SECRET_KEY" in str(caught.value)
    assert "wrong-secret" not in str(caught.value)


def test_missing_bucket_is_permanent_and_says_how_to_create_it(s3_settings: Settings) -> None:
    store = ObjectStore.from_settings(s3_settings)

    with pytest.raises(StorageConfigError, match="quantdesk up"):
        store.put_bytes(ObjectRef(bucket="no-such-bucket", key="k"), b"x")


def test_unreachable_server_is_retryable(s3_settings: Settings) -> None:
    store = ObjectStore("127.0.0.1:1", "key", "secret")

    with pytest.raises(StorageUnavailable) as caught:
        store.get_bytes(ObjectRef(bucket="charts", key="k"))

    assert caught.value.retryable


def test_ensure_buckets_is_idempotent(s3_settings: Settings) -> None:
    store = ObjectStore.from_settings(s3_settings)

    store.ensure_buckets("extra-bucket")
    store.ensure_buckets("extra-bucket")

    store.put_bytes(ObjectRef(bucket="extra-bucket", key="k"), b"v")
