"""What a person sees when a request cannot be served: a message and the right HTTP status.

Pages raise ``PageError`` (or a subclass naming the status); the app turns it, and any
error from the project's own layers, into the error page. No stack trace reaches the
browser: an unexpected error is logged and answered with a 500 that says where to look.
"""

from __future__ import annotations


class PageError(Exception):
    """A request the console cannot serve, with the status and a message for people."""

    status = 400

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class NotFound(PageError):
    """No such run, book, schedule or object."""

    status = 404


class Conflict(PageError):
    """The thing exists but cannot do that now (an approval already answered, say)."""

    status = 409


class Unavailable(PageError):
    """A server the page needs (Temporal, S3, the database) does not answer."""

    status = 503
