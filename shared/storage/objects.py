"""A small object store over the ``minio`` client, for any S3 API.

Callers choose keys (workflow id + run id + step), so an activity retried after
a crash overwrites its own object instead of leaving a twin behind. Errors are
sorted by what retrying can do: an unreachable server is ``StorageUnavailable``
(retryable), refused credentials, a missing bucket or a certificate the client does
not trust are ``StorageConfigError`` naming the setting to fix, a missing key is
``ObjectNotFound``, and buckets these credentials may not create are ``NeedsOperator``,
naming them all.
"""

from __future__ import annotations

import io
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path

import urllib3
from minio import Minio
from minio.error import S3Error
from pydantic import BaseModel, Field

from shared.config import ENV_PREFIX, Settings
from shared.errors import NeedsOperator, ObjectNotFound, StorageConfigError, StorageUnavailable

_AUTH_CODES = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken"}
_MISSING_KEY_CODES = {"NoSuchKey", "NoSuchObject"}


@cache
def _http_client(ca_file: Path | None) -> urllib3.PoolManager:
    """The connection pool of every store trusting ``ca_file`` (None: the system's CAs).

    Connection failures surface quickly so Temporal, not urllib3, owns the retries."""
    return urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=5, read=60),
        retries=urllib3.Retry(total=0, connect=0, read=0, redirect=0),
        maxsize=16,
        cert_reqs="CERT_REQUIRED",
        ca_certs=None if ca_file is None else str(ca_file),
    )


def _causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and what it wraps: urllib3 keeps the ssl error as the ``reason`` of its
    ``MaxRetryError``, raised while handling it."""
    seen: BaseException | None = error
    while seen is not None:
        yield seen
        reason = getattr(seen, "reason", None)
        seen = reason if isinstance(reason, BaseException) else seen.__cause__ or seen.__context__


class ObjectRef(BaseModel):
    """Where one stored object is: what travels through Temporal instead of the bytes."""

    bucket: str = Field(description="bucket name")
    key: str = Field(description="object key chosen by the workflow")
    content_type: str = "application/octet-stream"


class StoredObject(BaseModel):
    """One object as a listing shows it."""

    ref: ObjectRef
    size: int
    modified: datetime = Field(description="when it was last written (UTC)")


class ObjectStore:
    """Put and get bytes by key; create buckets; hand out presigned URLs."""

    def __init__(
        self,
        endpoint: str,
        access_key: str,
        secret_key: str,
        *,
        secure: bool = False,
        region: str = "us-east-1",
        ca_file: Path | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.secure = secure
        self._client = Minio(
            endpoint,
            access_key=access_key,
            secret_key=secret_key,
            secure=secure or ca_file is not None,
            region=region,
            http_client=_http_client(ca_file),
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> ObjectStore:
        """A store for the configured endpoint and credentials."""
        access, secret = settings.s3_credentials()
        return cls(
            settings.s3.endpoint,
            access,
            secret,
            secure=settings.s3.secure,
            region=settings.s3.region,
            ca_file=settings.s3.ca_file,
        )

    @contextmanager
    def _translated(self, bucket: str, key: str | None = None) -> Iterator[None]:
        """Turn minio and connection errors into quantdesk's storage errors."""
        where = f"s3://{bucket}/{key}" if key else f"s3://{bucket}"
        try:
            yield
        except S3Error as error:
            if error.code in _AUTH_CODES:
                raise StorageConfigError(
                    f"S3 at {self.endpoint} refused the credentials ({error.code}) for {where}.",
                    fix=f"Check {ENV_PREFIX}S3__ACCESS_KEY and {ENV_PREFIX}S3__SECRET_KEY.",
                ) from None
            if error.code == "NoSuchBucket":
                raise StorageConfigError(
                    f"bucket {bucket!r} does not exist at {self.endpoint}.",
                    fix="Run `quantdesk up`: it creates the buckets, or names the ones someone "
                    "allowed to must create.",
                ) from None
            if error.code in _MISSING_KEY_CODES:
                raise ObjectNotFound(f"no object at {where}.") from None
            raise StorageUnavailable(
                f"S3 error {error.code} for {where}: {error.message}"
            ) from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            self._raise_tls_refusal(error)
            raise StorageUnavailable(
                f"S3 at {self.endpoint} is unreachable ({type(error).__name__}).",
                fix=f"Start it with `quantdesk up` or fix {ENV_PREFIX}S3__ENDPOINT.",
            ) from None

    def _raise_tls_refusal(self, error: BaseException) -> None:
        """A ``StorageConfigError`` when ``error`` is TLS refusing the server, which no retry
        can mend: a certificate the client does not trust, or no TLS at all on the far end.
        Other TLS failures (a handshake cut short) stay retryable."""
        for cause in _causes(error):
            if isinstance(cause, ssl.SSLCertVerificationError):
                raise StorageConfigError(
                    f"S3 at {self.endpoint} presented a certificate the client does not trust "
                    f"({cause.verify_message}).",
                    fix=f"Set {ENV_PREFIX}S3__CA_FILE to the PEM bundle of the CA that signed "
                    "it (unset, only the system's CAs are trusted), and "
                    f"{ENV_PREFIX}S3__ENDPOINT to a name the certificate carries.",
                ) from None
            if isinstance(cause, ssl.SSLError) and cause.reason == "WRONG_VERSION_NUMBER":
                raise StorageConfigError(
                    f"S3 at {self.endpoint} does not answer HTTPS (it speaks plain HTTP).",
                    fix=f"Unset {ENV_PREFIX}S3__SECURE and {ENV_PREFIX}S3__CA_FILE, or set "
                    f"{ENV_PREFIX}S3__ENDPOINT to the server's HTTPS port.",
                ) from None

    def ensure_buckets(self, *buckets: str) -> None:
        """Create each bucket that does not exist yet; ``NeedsOperator`` naming every missing
        one when these credentials may not create buckets (they may still use them)."""
        missing = []
        for bucket in buckets:
            with self._translated(bucket):
                if not self._client.bucket_exists(bucket):
                    missing.append(bucket)
        for bucket in missing:
            try:
                with self._translated(bucket):
                    self._client.make_bucket(bucket)
            except StorageConfigError:
                raise self._not_creatable(missing) from None

    def _not_creatable(self, missing: list[str]) -> NeedsOperator:
        """Buckets these credentials may not create, and how someone allowed to does it."""
        names = ", ".join(missing)
        scheme = "https" if self.secure else "http"
        made = " && ".join(
            f"aws s3 mb s3://{bucket} --endpoint-url {scheme}://{self.endpoint}"
            for bucket in missing
        )
        return NeedsOperator(
            f"S3 at {self.endpoint} has no bucket {names}, and it refused to let these "
            "credentials create them.",
            fix=f"Ask someone allowed to create them (`{made}`, or `mc mb` with MinIO's "
            f"client); quantdesk's bucket names are fixed. Or give {ENV_PREFIX}S3__ACCESS_KEY "
            f"and {ENV_PREFIX}S3__SECRET_KEY of an account that may create buckets.",
        )

    def put_bytes(self, ref: ObjectRef, data: bytes) -> ObjectRef:
        """Store ``data`` under the ref's key, replacing whatever was there."""
        with self._translated(ref.bucket, ref.key):
            self._client.put_object(
                ref.bucket, ref.key, io.BytesIO(data), len(data), content_type=ref.content_type
            )
        return ref

    def get_bytes(self, ref: ObjectRef) -> bytes:
        """The stored bytes of ``ref``."""
        with self._translated(ref.bucket, ref.key):
            response = self._client.get_object(ref.bucket, ref.key)
            try:
                return response.read()
            finally:
                response.close()
                response.release_conn()

    def exists(self, ref: ObjectRef) -> bool:
        """Whether an object is stored under the ref's key."""
        try:
            with self._translated(ref.bucket, ref.key):
                self._client.stat_object(ref.bucket, ref.key)
        except ObjectNotFound:
            return False
        return True

    def listed(self, bucket: str, prefix: str) -> Iterator[StoredObject]:
        """Every object of ``bucket`` whose key starts with ``prefix``, read page by page."""
        with self._translated(bucket, prefix):
            for found in self._client.list_objects(bucket, prefix=prefix, recursive=True):
                if found.object_name is None or found.last_modified is None:
                    continue  # a folder marker, not an object
                yield StoredObject(
                    ref=ObjectRef(bucket=bucket, key=found.object_name),
                    size=found.size or 0,
                    modified=found.last_modified,
                )

    def modified(self, ref: ObjectRef) -> datetime | None:
        """When the object was last written; None when there is none."""
        try:
            with self._translated(ref.bucket, ref.key):
                return self._client.stat_object(ref.bucket, ref.key).last_modified
        except ObjectNotFound:
            return None

    def delete(self, ref: ObjectRef) -> None:
        """Remove the object under the ref's key (no error if there is none)."""
        with self._translated(ref.bucket, ref.key):
            self._client.remove_object(ref.bucket, ref.key)

    def presigned_url(self, ref: ObjectRef, expires: timedelta = timedelta(days=7)) -> str:
        """A URL anyone can GET the object with until it expires."""
        with self._translated(ref.bucket, ref.key):
            return self._client.presigned_get_object(ref.bucket, ref.key, expires=expires)
