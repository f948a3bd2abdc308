"""A tiny Chrome DevTools Protocol client for the browser tests (websocket-client only).

Chromium runs headless with ``--remote-debugging-port=0``; the port is read from
``<user-data-dir>/DevToolsActivePort``. One :class:`Page` per test drives one tab:
``navigate``, ``evaluate`` (JS expression, awaited, returned by value), ``wait_for`` (poll
an expression until truthy), mouse and key input, ``screenshot``.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import websocket

CHROMIUM = os.environ.get("TBIO_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-default-apps", "--mute-audio", "--hide-scrollbars", "--disable-dev-shm-usage"]


class CdpError(RuntimeError):
    pass


class Browser:
    def __init__(self, width: int = 1400, height: int = 1000):
        self.profile = tempfile.mkdtemp(prefix="tbio-chromium-")
        args = [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1", f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if self.proc.poll() is not None:
                raise CdpError(f"chromium exited with {self.proc.returncode}")
            if time.monotonic() > deadline:
                self.close()
                raise CdpError("chromium did not open its DevTools port")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])

    def new_page(self) -> "Page":
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT")
        with urllib.request.urlopen(req, timeout=10) as r:
            info = json.load(r)
        return Page(info["webSocketDebuggerUrl"])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, ws_url: str):
        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.ids = itertools.count(1)
        self.events: list[dict] = []
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method: str, **params) -> dict:
        mid = next(self.ids)
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise CdpError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def evaluate(self, expr: str) -> Any:
        r = self.call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True,
                      userGesture=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CdpError(f"JS error: {d.get('exception', {}).get('description') or d.get('text')}")
        return r.get("result", {}).get("value")

    def wait_for(self, expr: str, timeout: float = 30.0, interval: float = 0.05) -> Any:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.evaluate(expr)
            except CdpError as exc:
                last = exc
            else:
                if last:
                    return last
            time.sleep(interval)
        raise TimeoutError(f"timed out waiting for {expr!r} (last: {last!r})")

    def mouse(self, kind: str, x: float, y: float, button: str = "left", **kw) -> None:
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button=button,
                  clickCount=1 if kind != "mouseMoved" else 0, **kw)

    def click(self, x: float, y: float) -> None:
        self.mouse("mouseMoved", x, y, button="none")
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y)

    def key(self, key: str) -> None:
        code = f"Key{key.upper()}" if len(key) == 1 and key.isalpha() else key
        vk = ord(key.upper()) if len(key) == 1 else 0
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=code, text=key if kind == "keyDown" else "",
                      windowsVirtualKeyCode=vk)

    def wheel(self, x: float, y: float, dy: float, dx: float = 0) -> None:
        self.call("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=dx, deltaY=dy)

    def screenshot(self, path: str | os.PathLike) -> None:
        r = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(base64.b64decode(r["data"]))

    def close(self) -> None:
        try:
            self.call("Page.close")
        except Exception:
            pass
        try:
            self.ws.close()
        except Exception:
            pass
