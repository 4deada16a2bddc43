"""Why the client cannot do what a door asked: a message for people and its kind as an HTTP status.

The client raises ``DeskError`` (or a subclass naming the status). Each door says it its own
way: the console as its error page with that status (no stack trace reaches the browser),
the MCP server as a tool error. The statuses are HTTP's because two of the doors speak it.
"""

from __future__ import annotations

from shared.errors import QuantdeskError


class DeskError(QuantdeskError):
    """A request the client cannot serve, with the status and a message for people (a
    quantdesk error, so the CLI says it in one line as it says every other)."""

    status = 400

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class NotFound(DeskError):
    """No such run, book, schedule or object."""

    status = 404


class Conflict(DeskError):
    """The thing exists but cannot do that now (an approval already answered, say)."""

    status = 409


class Unavailable(DeskError):
    """A server the page needs (Temporal, S3, the database) does not answer."""

    status = 503
