"""A real headless Chromium for the console's browser tests, driven over the DevTools protocol.

Debian's ``chromium`` (``.ci/run`` installs it when missing) is started with a remote
debugging port of its own choosing on loopback; one page is opened and driven through
a small CDP client over ``websockets``: navigate, evaluate JavaScript (to read the DOM,
fill a form, click), choose a file to upload, wait until an expression holds, and capture a full-page
screenshot. No browser is downloaded by a tool at run time.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import shutil
import subprocess
import threading
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import websockets

from tests.servers import stop

LISTENING = re.compile(r"DevTools listening on (ws://127\.0\.0\.1:(\d+)/\S+)")
START_TIMEOUT = 30.0
WIDTH, HEIGHT = 1280, 900


def chromium_binary() -> str | None:
    """Debian's chromium, if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One browser tab, driven by DevTools commands."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self._ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """One command; its result (events that arrive meanwhile are skipped)."""
        ident = next(self._ids)
        await self._socket.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(await self._socket.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result

    async def goto(self, url: str) -> None:
        """Open ``url`` and wait until its document has loaded."""
        await self.send("Page.navigate", url=url)
        await self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'")

    async def fill_and_submit(self, form: dict[str, str | list[str]], button: str) -> None:
        """Fill a form's fields as a person would (a list ticks those boxes), then press the
        button with id ``button``."""
        for name, value in form.items():
            for box in value if isinstance(value, list) else []:
                await self.evaluate(
                    f'document.querySelector(\'input[name="{name}"][value="{box}"]\').checked = true'
                )
            if not isinstance(value, list):
                await self.evaluate(
                    f"document.querySelector('[name=\"{name}\"]').value = {value!r}"
                )
        await self.evaluate(f"document.getElementById({button!r}).click()")

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        answer = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in answer:
            raise RuntimeError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 60.0) -> Any:
        """Poll ``expression`` until it is truthy (an element counts); its value. Fails naming
        the expression and showing the page's text."""
        probe = f"(() => {{ const v = ({expression}); return v instanceof Node ? true : v; }})()"
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            with contextlib.suppress(RuntimeError):  # a page between two documents
                value = await self.evaluate(probe)
                if value:
                    return value
            if asyncio.get_running_loop().time() > deadline:
                text = await self.evaluate("document.body ? document.body.innerText : ''")
                raise AssertionError(f"never true: {expression}\npage text:\n{text[:3000]}")
            await asyncio.sleep(0.25)

    async def choose_file(self, selector: str, path: Path) -> None:
        """Choose ``path`` in the file input ``selector``, as a person picking it would."""
        document = await self.send("DOM.getDocument")
        found = await self.send(
            "DOM.querySelector", nodeId=document["root"]["nodeId"], selector=selector
        )
        await self.send("DOM.setFileInputFiles", files=[str(path)], nodeId=found["nodeId"])

    async def screenshot(self, path: Path) -> Path:
        """The whole page as a PNG at ``path``."""
        height = await self.evaluate("document.documentElement.scrollHeight")
        await self.send(
            "Emulation.setDeviceMetricsOverride",
            width=WIDTH,
            height=max(HEIGHT, int(height)),
            deviceScaleFactor=1,
            mobile=False,
        )
        shot = await self.send("Page.captureScreenshot", format="png")
        await self.send(
            "Emulation.setDeviceMetricsOverride",
            width=WIDTH,
            height=HEIGHT,
            deviceScaleFactor=1,
            mobile=False,
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@contextlib.asynccontextmanager
async def chromium_page(profile: Path) -> AsyncIterator[Page]:
    """A headless Chromium with one page, closed when the block ends."""
    binary = chromium_binary()
    if binary is None:
        raise RuntimeError("chromium is not installed: apt-get install -y chromium")
    process = subprocess.Popen(
        [
            binary,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = await asyncio.wait_for(asyncio.to_thread(_debugging_port, process), START_TIMEOUT)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as answer:
            targets = json.loads(answer.read())
        target = next(t for t in targets if t["type"] == "page")
        async with websockets.connect(target["webSocketDebuggerUrl"], max_size=None) as socket:
            page = Page(socket)
            await page.send("Page.enable")
            await page.send(
                "Emulation.setDeviceMetricsOverride",
                width=WIDTH,
                height=HEIGHT,
                deviceScaleFactor=1,
                mobile=False,
            )
            yield page
    finally:
        stop(process, patience=10)


def _debugging_port(process: subprocess.Popen[str]) -> int:
    """The port Chromium chose, read from the line it prints on stderr."""
    assert process.stderr is not None
    for line in process.stderr:
        if found := LISTENING.search(line):
            # Keep reading what it says, so a full pipe never blocks the browser.
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return int(found.group(2))
    raise RuntimeError(f"chromium exited ({process.wait()}) before it listened")
