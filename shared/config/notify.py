"""Where the desk's notices to people go: Apprise URLs, per kind, and when a waiting plan is
reminded and escalated."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, Field, SecretStr
from pydantic_settings import NoDecode

from shared.notify.notices import NoticeKind


def _apprise_urls(value: object) -> object:
    """A JSON list, or URLs separated by white space (not commas: an Apprise URL may hold
    them, as ``mailto://...?to=a@x.org,b@x.org``)."""
    if isinstance(value, str):
        text = value.strip()
        return json.loads(text) if text.startswith("[") else text.split()
    return value


AppriseUrls = Annotated[list[SecretStr], NoDecode, BeforeValidator(_apprise_urls)]
"""Apprise URLs carry tokens and passwords: secrets, never shown whole."""


class NotifySettings(BaseModel):
    """Where the desk's notices go: Apprise URLs (Slack, Telegram, e-mail, ntfy, Matrix, a
    JSON webhook...: https://github.com/caronc/apprise/wiki)."""

    urls: AppriseUrls = Field(
        default_factory=list, description="every notice's URLs, space-separated or a JSON list"
    )
    routes: dict[NoticeKind, AppriseUrls] = Field(
        default_factory=dict,
        description='a kind\'s own URLs instead of `urls`, JSON like {"drift": ["mailto://..."]}',
    )
    escalate_urls: AppriseUrls = Field(
        default_factory=list,
        description="who is told, besides, when an approval is about to time out",
    )
    remind_after: timedelta = Field(
        timedelta(minutes=30), description="a reminder when a plan still waits this long"
    )
    escalate_before: timedelta = Field(
        timedelta(minutes=15),
        description="the escalation, this long before an approval times out (at half the "
        "timeout when that is shorter)",
    )
    timeout_seconds: float = Field(
        10, gt=0, le=120, description="one URL's send limit: a notifier down never holds a run"
    )

    def urls_of(self, kind: NoticeKind) -> list[SecretStr]:
        """The URLs a notice of ``kind`` goes to: its route, else (an escalation) the
        escalation list, else every notice's."""
        if kind in self.routes:
            return self.routes[kind]
        if kind is NoticeKind.APPROVAL_ESCALATION and self.escalate_urls:
            return self.escalate_urls
        return self.urls
