"""A real headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`),
with the standard library only: open a page, click what a person clicks, read the text they read,
take a screenshot. For pages whose state a URL cannot reach (a tab the UI keeps in memory)."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any
import pytest
import shutil
from dq_contracts_tests.support import REPO


class Browser:
    """One Chromium process; messages are JSON, each ended by a NUL byte, on fds 3 (in) and 4 (out)."""

    def __init__(self, executable: str, flags: list[str]):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # the child sees the pipes as fds 3 and 4
        self.process = subprocess.Popen(
            [executable, *flags, "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=lambda: (os.dup2(to_chrome_r, 3), os.dup2(from_chrome_w, 4)))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._buffer = b""
        self.session: str | None = None

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:  # events arrive in between; only our answer matters here
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise AssertionError("chromium closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str, width: int = 1400, height: int = 1000) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1, "mobile": False})
        self.send("Page.enable")
        self.send("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result.get("result", {}).get("value")

    def text(self) -> str:
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def wait_for_text(self, *needles: str, timeout: float = 90) -> str:
        """The page's text once it holds every needle (the UI loads what it shows in several queries)."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.text()
            if all(n in text for n in needles):
                return text
            time.sleep(0.5)
        raise AssertionError(f"the page never showed {needles!r}; it shows:\n{text[:4000]}")

    def wait_for_match(self, pattern: str, timeout: float = 90) -> re.Match:
        """The first match of `pattern` in the page's text, whitespace runs made one space, once there is one."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = re.sub(r"\s+", " ", self.text())
            found = re.search(pattern, text)
            if found:
                return found
            time.sleep(0.5)
        raise AssertionError(f"the page never showed {pattern!r}; it shows:\n{text[-4000:]}")

    def click_text(self, text: str, selector: str = "button, [role=tab], a") -> None:
        """Click the last element matching `selector` whose own text is `text` (as a person clicks a label)."""
        found = self.evaluate(
            f"(() => {{ const all = [...document.querySelectorAll({json.dumps(selector)})]"
            f".filter(e => e.innerText && e.innerText.trim() === {json.dumps(text)});"
            " if (!all.length) return false; all[all.length - 1].click(); return true; })()")
        if not found:
            raise AssertionError(f"nothing to click labelled {text!r} on the page:\n{self.text()[:4000]}")

    def type_into(self, selector: str, text: str) -> None:
        """Replace the text of the input `selector` names with `text`, typed, then press Enter."""
        if not self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false;"
                             " e.focus(); e.select(); return true; })()"):
            raise AssertionError(f"no input {selector!r} on the page:\n{self.text()[:4000]}")
        self.send("Input.insertText", {"text": text})
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", {"type": kind, "key": "Enter", "code": "Enter",
                                                 "windowsVirtualKeyCode": 13, "text": "\r" if kind == "keyDown" else ""})

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.send("Browser.close", session=False)
        except (AssertionError, OSError):
            pass
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass


OUTPUT = Path(os.environ.get("DQ_TEST_OUTPUT", REPO / "test-output"))


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                  "--window-size=1400,1000", "--virtual-time-budget=20000"]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if os.environ.get("CI"):
            raise AssertionError("chromium is not installed; .ci/run installs Debian's chromium package")
        pytest.skip("chromium is not installed")
    return found
