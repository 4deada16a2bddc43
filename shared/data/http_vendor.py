"""What the HTTP data vendors (FRED, the SEC) share: one GET with its transport faults as the
router's kinds, and a vendor's wait after a 429.

A vendor's client has explicit timeouts and no retries of its own (Temporal retries the tool
activity): a timeout or a dropped connection is a retryable ``VendorFailure`` naming the
vendor, never a hang; a status other than 200 goes back to the vendor, which knows what its
error bodies mean.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta

import httpx

from shared.errors import VendorFailure


def get(
    http: httpx.Client,
    vendor: str,
    path: str,
    params: Mapping[str, str] | None = None,
    *,
    refused: Callable[[httpx.Response], Exception],
) -> httpx.Response:
    """``GET path``: the response when it is 200, else ``refused(response)`` raised."""
    try:
        response = http.get(path, params=params)
    except httpx.TimeoutException:
        raise VendorFailure(f"{vendor} gave no answer in {http.timeout.read} s") from None
    except httpx.TransportError as error:
        raise VendorFailure(f"{vendor} could not be reached ({type(error).__name__})") from None
    if response.status_code != 200:
        raise refused(response)
    return response


def json_of(response: httpx.Response, vendor: str) -> object:
    """The response's JSON body, or a ``VendorFailure`` when it is not JSON."""
    try:
        return response.json()
    except ValueError:
        raise VendorFailure(f"{vendor} answered with a body that is not JSON") from None


def retry_after(response: httpx.Response, default: timedelta) -> timedelta:
    """The wait a 429 names in ``Retry-After`` (seconds), else ``default``."""
    wait = response.headers.get("Retry-After", "")
    return timedelta(seconds=int(wait)) if wait.isdigit() else default
