"""A real HTTP server speaking the OpenAI and Anthropic wire formats, for tests.

Tests drive the official SDKs against it through ``base_url``, so what they check
is what a vendor would see (the exact JSON on the wire) and what a vendor would
send back (status codes, headers, error bodies). Replies are scripted in a
queue and are vendor-neutral: each is rendered in the wire format of the
endpoint that receives it, so one script serves a test parametrised over
providers. An empty queue answers 500 "no scripted reply", so a test can never
pass on a reply it did not script.

What the vendors do with structured-output requests is done here too, because
that is what the clients must get right:

- OpenAI refuses (400, its error body) a ``json_schema`` with ``strict: true``
  that breaks the strict-mode rules (``vendor_schemas.strict_schema_problem``),
  a schema name outside ``[a-zA-Z0-9_-]{1,64}``, and a ``json_object`` request
  whose messages never say "json". Scripted text is sent as given (a test
  scripts prose or inconsistent fields on purpose); ``reply_conforming()`` is
  what strict decoding answers: a value of the requested schema.
- Anthropic refuses a ``tool_choice`` without tools or naming a tool not
  offered, and tools whose input schema is not an object. It honours
  ``tool_choice``: ``tool`` (or ``any`` when the script calls no tool) answers
  with one ``tool_use`` block and ``stop_reason: "tool_use"``, no text (the API
  prefills the turn), the scripted JSON object as the input, or, for prose, a
  value of the tool's schema carrying the prose, as Claude fills a tool it must
  call. Under ``any`` the answer goes to the last tool offered, where quantdesk
  puts its answer tool. Without ``tool_choice`` prose stays prose, as Claude's does.

    with FakeLlmServer() as server:
        server.reply_text("hello")
        ...  # point a client at server.base_url_openai or server.base_url_anthropic
        assert server.last_request.body["model"] == "gpt-4.1"
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.served import ServedInThread
from tests.fakes.vendor_schemas import instance_of, strict_schema_problem


class Wire(StrEnum):
    """The two wire formats the server speaks."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"


# "/chat/completions" too, for SDKs whose base URL already ends in /v1 but is joined oddly.
WIRE_BY_PATH = {
    "/v1/chat/completions": Wire.OPENAI,
    "/chat/completions": Wire.OPENAI,
    "/v1beta/openai/chat/completions": Wire.OPENAI,  # Gemini's OpenAI-compatible endpoint
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
    ``conforming`` answers with a value of the schema the request asks for (its
    ``json_schema``, or the tool it forces), ``text`` in its prose fields.
    """

    status: int = 200
    text: str = ""
    tool_calls: tuple[FakeToolCall, ...] = ()
    usage: tuple[int, int] = (11, 7)
    message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None
    conforming: bool = False
    overflow: tuple[int, int] | None = None  # (prompt tokens, window): the vendor's 400 for it


# -- what each vendor refuses before answering ------------------------------------


class Refusal(Exception):
    """A request the vendor answers with 400: what it says, and the parameter at fault."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


_SCHEMA_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _message_text(body: dict[str, Any]) -> str:
    """Every text of every message, for the "json" rule of ``json_object``."""
    texts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [part.get("text", "") for part in content if isinstance(part, dict)]
    return " ".join(texts)


def _check_openai(body: dict[str, Any]) -> None:
    response_format = body.get("response_format") or {}
    kind = response_format.get("type")
    if kind == "json_object" and "json" not in _message_text(body).lower():
        raise Refusal(
            "'messages' must contain the word 'json' in some form, to use 'response_format' of "
            "type 'json_object'.",
            "messages",
        )
    if kind != "json_schema":
        return
    spec = response_format.get("json_schema") or {}
    name = spec.get("name", "")
    if not _SCHEMA_NAME.match(name):
        raise Refusal(
            f"Invalid 'response_format.json_schema.name': string does not match pattern. "
            f"Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$', got {name!r}.",
            "response_format.json_schema.name",
        )
    if spec.get("strict"):
        problem = strict_schema_problem(spec.get("schema"))
        if problem is not None:
            raise Refusal(
                f"Invalid schema for response_format '{name}': {problem}", "response_format"
            )


def _check_anthropic(body: dict[str, Any]) -> None:
    tools = body.get("tools") or []
    names = [tool.get("name", "") for tool in tools]
    for i, tool in enumerate(tools):
        if not _SCHEMA_NAME.match(names[i]):
            raise Refusal(f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'")
        if (tool.get("input_schema") or {}).get("type") != "object":
            raise Refusal(f"tools.{i}.custom.input_schema.type: Input should be 'object'")
    if len(set(names)) != len(names):
        raise Refusal("tools: Tool names must be unique.")
    choice = body.get("tool_choice")
    if choice is None:
        return
    if not tools:
        raise Refusal("tool_choice: tool_choice may only be specified while providing tools.")
    if choice.get("type") == "tool" and choice.get("name") not in names:
        raise Refusal(f"tool_choice: Tool '{choice.get('name')}' not found in tools.")


# -- replies -----------------------------------------------------------------------


def _json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, if that is what it is."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _openai_text(script: Scripted, body: dict[str, Any]) -> str:
    """The scripted text, or what strict decoding writes for a conforming script."""
    spec = (body.get("response_format") or {}).get("json_schema")
    if not script.conforming or not spec:
        return script.text
    return json.dumps(instance_of(spec["schema"], script.text))


def _openai_reply(script: Scripted, model: str, body: dict[str, Any]) -> dict[str, Any]:
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
    text = _openai_text(script, body)
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None}
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


def _tool_use(name: str, arguments: object, call_id: str | None = None) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id or _new_id(_TOOL_ID_PREFIX[Wire.ANTHROPIC]),
        "name": name,
        "input": arguments,
    }


def _forced_tool(script: Scripted, body: dict[str, Any]) -> dict[str, Any] | None:
    """The tool a reply must go through when ``tool_choice`` says one must be used."""
    choice = body.get("tool_choice") or {}
    tools = body.get("tools") or []
    if choice.get("type") == "tool":
        return next(tool for tool in tools if tool["name"] == choice["name"])
    if choice.get("type") == "any" and not script.tool_calls:
        return tools[-1]
    return None


def _anthropic_content(script: Scripted, body: dict[str, Any]) -> list[dict[str, Any]]:
    forced = _forced_tool(script, body)
    if forced is not None and not script.tool_calls:
        given = None if script.conforming else _json_object(script.text)
        value = given if given is not None else instance_of(forced["input_schema"], script.text)
        return [_tool_use(forced["name"], value)]
    content: list[dict[str, Any]] = [{"type": "text", "text": script.text}] if script.text else []
    return content + [_tool_use(c.name, c.arguments, c.id) for c in script.tool_calls]


def _anthropic_reply(script: Scripted, model: str, body: dict[str, Any]) -> dict[str, Any]:
    content = _anthropic_content(script, body)
    prompt, completion = script.usage
    return {
        "id": _new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt,
            "output_tokens": completion,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _openai_error(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    kind, code, _ = _ERROR_TYPES.get(status, _ERROR_TYPES[500])
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _overflow(wire: Wire, prompt: int, window: int) -> dict[str, Any]:
    """Each vendor's 400 for a prompt longer than the model's context window, as it words it."""
    if wire is Wire.ANTHROPIC:
        return _anthropic_error(400, f"prompt is too long: {prompt} tokens > {window} maximum")
    body = _openai_error(
        400,
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {prompt} tokens. Please reduce the length of the messages.",
        "messages",
    )
    body["error"]["code"] = "context_length_exceeded"
    return body


def _anthropic_error(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, _ERROR_TYPES[500])[2]
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": _new_id("req_"),
    }


_CHECK: dict[Wire, Callable[[dict[str, Any]], None]] = {
    Wire.OPENAI: _check_openai,
    Wire.ANTHROPIC: _check_anthropic,
}
_REPLY: dict[Wire, Callable[[Scripted, str, dict[str, Any]], dict[str, Any]]] = {
    Wire.OPENAI: _openai_reply,
    Wire.ANTHROPIC: _anthropic_reply,
}
_ERROR: dict[Wire, Callable[[int, str, str | None], dict[str, Any]]] = {
    Wire.OPENAI: _openai_error,
    Wire.ANTHROPIC: _anthropic_error,
}
_NO_SCRIPT = Scripted(status=500, message="no scripted reply: the test queued too few replies")


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def _headers(wire: Wire) -> dict[str, str]:
    return {"content-type": "application/json", _REQUEST_ID_HEADER[wire]: _new_id("req_")}


def _body(request: RecordedRequest) -> dict[str, Any]:
    return request.body if isinstance(request.body, dict) else {}


def refused(wire: Wire, request: RecordedRequest) -> _Answer | None:
    """The vendor's 400 for a request it refuses before any model sees it, else None."""
    try:
        _CHECK[wire](_body(request))
    except Refusal as refusal:
        payload = _ERROR[wire](400, refusal.message, refusal.param)
        return _Answer(400, _headers(wire), json.dumps(payload).encode())
    return None


def _render(script: Scripted, wire: Wire, request: RecordedRequest) -> _Answer:
    """The HTTP answer ``script`` makes to ``request`` in ``wire``'s format."""
    headers = _headers(wire) | dict(script.headers)
    if script.raw is not None:
        return _Answer(200, headers, script.raw)
    refusal = refused(wire, request)
    if refusal is not None:
        return refusal
    body = _body(request)
    model = str(body.get("model", "unknown-model"))
    if script.overflow is not None:
        return _Answer(400, headers, json.dumps(_overflow(wire, *script.overflow)).encode())
    if script.status >= 400:
        message = script.message.format(model=model, key=request.api_key or "")
        payload = _ERROR[wire](script.status, message, None)
    else:
        payload = _REPLY[wire](script, model, body)
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


class FakeLlmServer(ServedInThread):
    """Scripted OpenAI/Anthropic endpoints on a free local port, recording every request."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        super().__init__()

    # -- lifecycle -------------------------------------------------------------

    def _server(self) -> _HttpServer:
        return _HttpServer(self)

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
        """Record ``request`` and answer it with the next scripted reply.

        A request the vendor refuses takes no scripted reply: no model saw it.
        """
        wire = WIRE_BY_PATH.get(request.path)
        refusal = refused(wire, request) if wire is not None else None
        with self._lock:
            self.requests.append(request)
            script = self._queue.popleft() if self._queue and refusal is None else _NO_SCRIPT
        if wire is None:
            return _render(
                Scripted(status=404, message=f"no route {request.path}"), Wire.OPENAI, request
            )
        if refusal is not None:
            return refusal
        if script.delay:
            self.stopping.wait(script.delay)
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

    def reply_conforming(self, text: str = "") -> None:
        """What a schema-constrained model answers: a value of the requested schema."""
        self.script(Scripted(text=text, conforming=True))

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

    def context_overflow(self, prompt: int = 140_000, window: int = 128_000) -> None:
        """400: the prompt (``prompt`` tokens) exceeds the model's ``window``, in each vendor's
        words (OpenAI's code ``context_length_exceeded``, Anthropic's "prompt is too long")."""
        self.script(Scripted(status=400, overflow=(prompt, window)))

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
