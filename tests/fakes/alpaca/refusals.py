"""Alpaca's error answers: an HTTP status and a ``{"code": int, "message": str}`` body.

Alpaca's codes are the status followed by five digits (40310000 for a 403). Its
documentation calls the code and the status the stable contract and the message
free text, so clients should branch on those two; the messages here are Alpaca's
where they are known (``client_order_id must be unique``, ``order not found``).
"""

from __future__ import annotations

from typing import Any


class Refusal(Exception):
    """A request Alpaca answers with an error instead of doing it."""

    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, Any]:
        """The JSON body Alpaca sends with the status."""
        return {"code": self.code, "message": self.message}


def malformed(message: str = "request body format is invalid") -> Refusal:
    """400: the body is not a JSON object."""
    return Refusal(400, 40010000, message)


def not_authorized() -> Refusal:
    """401: a key header missing, or a pair that is not the account's."""
    return Refusal(401, 40110000, "request is not authorized")


def forbidden(message: str) -> Refusal:
    """403: the account cannot afford it (buying power, shares to sell)."""
    return Refusal(403, 40310000, message)


def not_found(message: str) -> Refusal:
    """404: no such order, position or endpoint."""
    return Refusal(404, 40410000, message)


def invalid(message: str) -> Refusal:
    """422: a parameter missing, of the wrong kind, or a client_order_id already used."""
    return Refusal(422, 40010001, message)


def unprocessable(message: str) -> Refusal:
    """422: a valid request Alpaca will not carry out (unknown asset, order not cancelable)."""
    return Refusal(422, 42210000, message)


def not_simulated(what: str) -> Refusal:
    """501: part of the spec the stand-in does not simulate; loud, so no test passes on it."""
    return Refusal(501, 50110000, f"{what} is not simulated by the Alpaca stand-in")
