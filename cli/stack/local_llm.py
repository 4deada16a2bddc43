"""The embedded local model: llama.cpp's own server, run in-process by ``xllamacpp``.

When ``QUANTDESK_LOCAL_LLM__MODEL`` names a GGUF file, `quantdesk up` runs
``quantdesk local-llm`` as the ``local-llm`` component: llama.cpp's
OpenAI-compatible server on loopback, which provider ``llamacpp`` points at. This
module checks what the server needs before it starts (a readable GGUF file, the
``xllamacpp`` package), builds the launch spec `up` runs, says whether the server
is healthy, and is the server process itself. The test suite starts the server
through the same launch spec.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from cli.stack.servers import NoJson, PortClaim, ServerLaunch, json_at, section_env
from shared.config import ENV_PREFIX, Settings
from shared.errors import ConfigError
from shared.extras import install_command
from shared.llm.providers import LOCAL_MODEL
from shared.ports import LOOPBACK, port_is_free

LOCAL_LLM = "local-llm"
MODEL_SETTING = f"{ENV_PREFIX}LOCAL_LLM__MODEL"
PORT_SETTING = f"{ENV_PREFIX}LOCAL_LLM__PORT"
GGUF_MAGIC = b"GGUF"
INSTALL_HINT = (
    "Run `quantdesk model install smollm2` and set "
    f"{MODEL_SETTING} to the path it prints (any GGUF file works the same)."
)
# A large GGUF read cold from disk on a loaded machine loads for minutes; llama.cpp
# answers /health with 503 meanwhile. A healthy server ends `up`'s wait at once.
LOCAL_LLM_HEALTH_TIMEOUT = 300.0
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
MAIN_LOOP_TIMEOUT = 60.0


def checked_model(settings: Settings) -> Path:
    """The configured model file, resolved, once it is known to be a readable GGUF file.

    Checked before llama.cpp sees it: llama.cpp's own answer to a wrong file is
    "Failed to init server", with the reason only in its log."""
    model = settings.local_llm.model
    if model is None:
        raise ConfigError(MODEL_SETTING, "not set", fix=INSTALL_HINT)
    path = model.expanduser().resolve()
    if not path.exists():
        raise ConfigError(MODEL_SETTING, f"no file at {path}", fix=INSTALL_HINT)
    if not path.is_file():
        raise ConfigError(MODEL_SETTING, f"{path} is not a file", fix=INSTALL_HINT)
    try:
        with path.open("rb") as file:
            head = file.read(len(GGUF_MAGIC))
    except OSError as error:
        raise ConfigError(
            MODEL_SETTING, f"cannot read {path} ({error.strerror})", fix=INSTALL_HINT
        ) from None
    if head != GGUF_MAGIC:
        raise ConfigError(
            MODEL_SETTING,
            f"{path} is not a GGUF file (it starts with {head!r}, not {GGUF_MAGIC!r})",
            fix=INSTALL_HINT,
        )
    return path


def require_xllamacpp() -> ModuleType:
    """The ``xllamacpp`` package, or an error naming the extra that brings it."""
    try:
        import xllamacpp
    except ImportError:
        raise ConfigError(
            MODEL_SETTING,
            "a model is set but xllamacpp (the llama.cpp server) is not installed",
            fix=f"Install it with `{install_command('local-llm')}`, or unset {MODEL_SETTING}.",
        ) from None
    return xllamacpp


def local_llm_env(settings: Settings) -> dict[str, str]:
    """The variables that make the server process serve exactly what ``settings`` say."""
    return {
        **section_env(settings, "local_llm"),
        MODEL_SETTING: str(checked_model(settings)),
        f"{ENV_PREFIX}LLAMACPP__MAX_CONCURRENT": str(settings.provider("llamacpp").max_concurrent),
    }


def local_llm_server(settings: Settings) -> ServerLaunch:
    """`quantdesk local-llm` with the model checked first, so `up` fails before it starts."""
    require_xllamacpp()
    argv = [sys.executable, "-m", "cli.main", LOCAL_LLM]
    ports = [PortClaim(settings.local_llm.port, PORT_SETTING, "llama.cpp server")]
    return ServerLaunch(LOCAL_LLM, argv, ports, env=local_llm_env(settings))


def health_problem(settings: Settings) -> str | None:
    """Whether llama.cpp answers ``/health`` with ``{"status": "ok"}`` (503 while loading)."""
    url = f"http://{LOOPBACK}:{settings.local_llm.port}/health"
    try:
        body = json_at(url)
    except NoJson as problem:
        loading = " (still loading the model)" if problem.status == 503 else ""
        return f"{problem}{loading}"
    status = body.get("status") if isinstance(body, dict) else body
    return None if status == "ok" else f"{url} answers status {status!r}"


def server_params(xllamacpp: ModuleType, settings: Settings, model: Path) -> Any:
    """llama.cpp's parameters: loopback only, no network, no browser access, no web UI.

    llama.cpp splits ``n_ctx`` among its parallel slots, so each slot gets
    ``context_tokens``, the window prompts are planned for."""
    section = settings.local_llm
    slots = settings.provider("llamacpp").max_concurrent
    threads = section.threads or os.cpu_count() or 1
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.model_alias = {LOCAL_MODEL}
    params.hostnames = [LOOPBACK]
    params.port = section.port
    params.n_parallel = slots
    params.n_ctx = section.context_tokens * slots
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.use_jinja = True
    params.offline = True
    params.ui = False
    params.endpoint_slots = True  # `_await_main_loop` asks it
    params.endpoint_metrics = True  # token counts and speeds, read by bench_local_model
    # No Access-Control-Allow-Origin: a web page cannot call the model from a browser.
    params.cors_origins = ""
    return params


def _stop_signals() -> int:
    """A pipe end that yields a byte per SIGTERM or SIGINT, whichever thread takes it.

    A process-wide handler: imported libraries already run threads of their own,
    any of which the kernel may pick, and with the default action that thread
    would kill the process before the server is shut down."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end)
    for stop in STOP_SIGNALS:
        signal.signal(stop, lambda _signum, _frame: None)
    return read_end


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold the stop signals while llama.cpp starts its threads, which inherit the mask.

    A stop signal taken by one of llama.cpp's threads while it loaded left the
    server unable to shut down (seen here: ``~Server`` waited for its main loop
    forever). A signal that came meanwhile is delivered when the block ends."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def _await_main_loop(port: int) -> None:
    """Return once llama.cpp's main loop answers (``/slots`` is answered by that loop).

    ``xllamacpp.Server`` returns while the HTTP side listens, possibly before its main
    loop runs; shut down in that moment, ``~Server`` waited for the loop forever (seen
    here about once in eight immediate stops, never after a request went through)."""
    url = f"http://{LOOPBACK}:{port}/slots"
    with urllib.request.urlopen(url, timeout=MAIN_LOOP_TIMEOUT) as response:
        response.read()


def serve(settings: Settings, say: Callable[[str], None]) -> None:
    """Serve the model until SIGTERM or SIGINT (also one that came while it loaded),
    then shut the server down in order and return."""
    model = checked_model(settings)
    xllamacpp = require_xllamacpp()
    port = settings.local_llm.port
    if not port_is_free(port):
        raise ConfigError(
            PORT_SETTING,
            f"port {port} is already in use",
            fix=f"Stop what uses it, or set {PORT_SETTING} to a free port.",
        )
    stops = _stop_signals()
    try:
        with _signals_held():
            server = xllamacpp.Server(server_params(xllamacpp, settings, model))
    except RuntimeError:
        raise ConfigError(
            MODEL_SETTING,
            f"llama.cpp could not load {model} (its reason is in the lines above)",
            fix="Check that the file is a whole GGUF model, or install a known one with "
            "`quantdesk model install smollm2`.",
        ) from None
    _await_main_loop(port)
    say(f"serving {model.name} as model {LOCAL_MODEL!r} at {server.listening_address}/v1")
    received = os.read(stops, 1)[0]
    say(f"{signal.Signals(received).name}: stopping")
    del server
