"""A real HTTP server speaking the OpenAI and Anthropic wire formats, for tests.

Tests drive the official SDKs against it through ``base_url``, so what they check
is what a vendor would see (the exact JSON on the wire) and what a vendor would
send back (status codes, headers, error bodies). Replies are scripted in a
queue and are vendor-neutral: each is rendered in the wire format of the
endpoint that receives it, so one script serves a test parametrised over
providers. An empty queue answers 500 "no scripted reply", so a test can never
pass on a reply it did not script.

    with FakeLlmServer() as server:
        server.reply_text("hello")
        ...  # point a client at server.base_url_openai or server.base_url_anthropic
        assert server.last_request.body["model"] == "gpt-4.1"
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class Wire(StrEnum):
    """The two wire formats the server speaks."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"


# "/chat/completions" too, for SDKs whose base URL already ends in /v1 but is joined oddly.
WIRE_BY_PATH = {
    "/v1/chat/completions": Wire.OPENAI,
    "/chat/completions": Wire.OPENAI,
    "/v1/messages": Wire.ANTHROPIC,
}

# status -> (OpenAI error type, OpenAI error code, Anthropic error type), as the vendors send them.
_ERROR_TYPES: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "invalid_request_error"),
    401: ("invalid_request_error", "invalid_api_key", "authentication_error"),
    403: ("invalid_request_error", None, "permission_error"),
    404: ("invalid_request_error", "model_not_found", "not_found_error"),
    429: ("requests", "rate_limit_exceeded", "rate_limit_error"),
    500: ("server_error", None, "api_error"),
    529: ("server_error", None, "overloaded_error"),
}
_REQUEST_ID_HEADER = {Wire.OPENAI: "x-request-id", Wire.ANTHROPIC: "request-id"}
_TOOL_ID_PREFIX = {Wire.OPENAI: "call_", Wire.ANTHROPIC: "toolu_"}


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as it arrived: what the SDK really put on the wire."""

    path: str
    headers: dict[str, str] = field(repr=False)  # names lower-cased
    body: Any  # the parsed JSON, or None when the body was not JSON
    received_at: float = 0.0  # time.monotonic() on arrival: lets tests measure retry delays

    @property
    def api_key(self) -> str | None:
        """The key the client sent, in either vendor's header."""
        bearer = self.headers.get("authorization", "")
        return bearer.removeprefix("Bearer ") or self.headers.get("x-api-key")


@dataclass(frozen=True)
class FakeToolCall:
    """A tool call to put in a reply; a string ``arguments`` goes out verbatim (OpenAI wire)."""

    name: str
    arguments: dict[str, Any] | str
    id: str | None = None


@dataclass(frozen=True)
class Scripted:
    """One queued answer, vendor-neutral until a request picks the wire format.

    ``message`` (errors only) may use ``{model}`` and ``{key}``: filled from the
    request, the way vendors echo the model and (some, partly) the key back.
    ``raw`` is sent verbatim with status 200, for malformed-body tests.
    """

    status: int = 200
    text: str = ""
    tool_calls: tuple[FakeToolCall, ...] = ()
    usage: tuple[int, int] = (11, 7)
    message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None


def _openai_reply(script: Scripted, model: str) -> dict[str, Any]:
    calls = [
        {
            "id": call.id or _new_id(_TOOL_ID_PREFIX[Wire.OPENAI]),
            "type": "function",
            "function": {
                "name": call.name,
                "arguments": call.arguments
                if isinstance(call.arguments, str)
                else json.dumps(call.arguments),
            },
        }
        for call in script.tool_calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": script.text or None, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    prompt, completion = script.usage
    return {
        "id": _new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
        "system_fingerprint": "fp_fake",
    }


def _anthropic_reply(script: Scripted, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": script.text}] if script.text else []
    content += [
        {
            "type": "tool_use",
            "id": call.id or _new_id(_TOOL_ID_PREFIX[Wire.ANTHROPIC]),
            "name": call.name,
            "input": call.arguments,
        }
        for call in script.tool_calls
    ]
    prompt, completion = script.usage
    return {
        "id": _new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if script.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt,
            "output_tokens": completion,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _openai_error(status: int, message: str) -> dict[str, Any]:
    kind, code, _ = _ERROR_TYPES.get(status, _ERROR_TYPES[500])
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _anthropic_error(status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, _ERROR_TYPES[500])[2]
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": _new_id("req_"),
    }


_REPLY: dict[Wire, Callable[[Scripted, str], dict[str, Any]]] = {
    Wire.OPENAI: _openai_reply,
    Wire.ANTHROPIC: _anthropic_reply,
}
_ERROR: dict[Wire, Callable[[int, str], dict[str, Any]]] = {
    Wire.OPENAI: _openai_error,
    Wire.ANTHROPIC: _anthropic_error,
}
# How often the serving loop checks for stop(): short, so each test's teardown is quick.
_POLL_SECONDS = 0.02
_NO_SCRIPT = Scripted(status=500, message="no scripted reply: the test queued too few replies")


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def _render(script: Scripted, wire: Wire, request: RecordedRequest) -> _Answer:
    """The HTTP answer ``script`` makes to ``request`` in ``wire``'s format."""
    headers = {"content-type": "application/json", _REQUEST_ID_HEADER[wire]: _new_id("req_")}
    headers |= script.headers
    if script.raw is not None:
        return _Answer(200, headers, script.raw)
    model = str((request.body or {}).get("model", "unknown-model"))
    if script.status >= 400:
        message = script.message.format(model=model, key=request.api_key or "")
        payload = _ERROR[wire](script.status, message)
    else:
        payload = _REPLY[wire](script, model)
    return _Answer(script.status, headers, json.dumps(payload).encode())


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


class _Handler(BaseHTTPRequestHandler):
    """Reads one request, hands it to the owning FakeLlmServer, writes its answer."""

    server: _HttpServer

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        request = RecordedRequest(
            path=self.path.split("?", 1)[0],
            headers={name.lower(): value for name, value in self.headers.items()},
            body=_parse_json(raw),
            received_at=time.monotonic(),
        )
        answer = self.server.fake.answer(request)
        try:
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and hung up: exactly what a slow-reply test wants

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: pytest output should show the test, not an access log."""


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeLlmServer) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)


class FakeLlmServer:
    """Scripted OpenAI/Anthropic endpoints on a free local port, recording every request."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free port and serve from a daemon thread."""
        self._stopping.clear()
        self._httpd = _HttpServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": _POLL_SECONDS}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; replies still sleeping are cut short."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeLlmServer is not started")
        return self._httpd.server_address[1]

    @property
    def base_url_openai(self) -> str:
        """What to pass as ``base_url`` to the OpenAI SDK (it appends /chat/completions)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def base_url_anthropic(self) -> str:
        """What to pass as ``base_url`` to the Anthropic SDK (it appends /v1/messages)."""
        return f"http://127.0.0.1:{self.port}"

    # -- what happened ---------------------------------------------------------

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            return self.requests[-1]

    @property
    def pending(self) -> int:
        """Scripted replies not consumed yet."""
        with self._lock:
            return len(self._queue)

    def answer(self, request: RecordedRequest) -> _Answer:
        """Record ``request`` and answer it with the next scripted reply."""
        with self._lock:
            self.requests.append(request)
            script = self._queue.popleft() if self._queue else _NO_SCRIPT
        wire = WIRE_BY_PATH.get(request.path)
        if wire is None:
            return _render(
                Scripted(status=404, message=f"no route {request.path}"), Wire.OPENAI, request
            )
        if script.delay:
            self._stopping.wait(script.delay)
        return _render(script, wire, request)

    # -- scripting -------------------------------------------------------------

    def script(self, *replies: Scripted) -> None:
        """Queue replies as given; the helpers below cover the usual ones."""
        with self._lock:
            self._queue.extend(replies)

    def reply_text(
        self, text: str, *, usage: tuple[int, int] = (11, 7), delay: float = 0.0
    ) -> None:
        """A plain assistant message; ``usage`` is (input, output) tokens."""
        self.script(Scripted(text=text, usage=usage, delay=delay))

    def reply_json(self, value: Any) -> None:
        """An assistant message whose text is ``value`` as JSON (structured-output tests)."""
        self.reply_text(json.dumps(value))

    def reply_tool_call(
        self,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        call_id: str | None = None,
        text: str = "",
    ) -> None:
        """An assistant turn asking for one tool call (finish reason tool_calls / tool_use)."""
        self.script(Scripted(text=text, tool_calls=(FakeToolCall(name, arguments, call_id),)))

    def fail(self, status: int, message: str, *, headers: Mapping[str, str] | None = None) -> None:
        """An error in the vendor's error-body shape; ``message`` may use {model} and {key}."""
        self.script(Scripted(status=status, message=message, headers=dict(headers or {})))

    def rate_limited(self, retry_after: float | str) -> None:
        """429 with ``Retry-After`` (seconds, or an HTTP date string)."""
        self.fail(
            429, "Rate limit reached for requests.", headers={"retry-after": str(retry_after)}
        )

    def server_error(self) -> None:
        self.fail(500, "The server had an error while processing your request.")

    def overloaded(self) -> None:
        """529, Anthropic's "overloaded" status."""
        self.fail(529, "Overloaded")

    def unauthorized(self) -> None:
        """401 that echoes the whole key back: worse than real vendors, to test redaction."""
        self.fail(401, "Incorrect API key provided: {key}. Find your key in the dashboard.")

    def unknown_model(self) -> None:
        self.fail(404, "The model `{model}` does not exist or you do not have access to it.")

    def slow(self, seconds: float, text: str = "too late") -> None:
        """A text reply that starts only after ``seconds``: longer than the client's timeout."""
        self.reply_text(text, delay=seconds)

    def malformed(self, body: bytes = b'{"id": "chatcmpl-1", "choices": [ <html>oops') -> None:
        """200 with a JSON content type and a body that is not JSON."""
        self.script(Scripted(raw=body))
