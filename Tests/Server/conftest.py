"""Fixtures for the server tests: `typeset serve` processes started on free loopback ports.

The tests drive them with the real `openai` client (and `httpx` for what the client does not
expose: raw status codes, disconnects, metrics). Models come from the Typeset cache
(`Fixtures/fetch.sh`); the binary is `.build/release/typeset` unless TYPESET_BINARY says otherwise.
"""
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import openai
import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("TYPESET_BINARY", ROOT / ".build" / "release" / "typeset"))
SCHEMAS = ROOT / "Fixtures" / "schemas"   # the seed schemas


class Server:
    """A `typeset serve` process: its base URL, its log, and ways to stop it."""

    def __init__(self, model="smollm2", *arguments, env=None):
        if not BINARY.exists():
            pytest.fail(f"{BINARY} does not exist: build it first (swift build -c release)")
        self.log = []
        self.process = subprocess.Popen(
            [str(BINARY), "serve", "--model", model, "--port", "0", *arguments],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
        self.listening = threading.Event()
        self.ready = threading.Event()
        self.port = None
        threading.Thread(target=self._read_log, daemon=True).start()
        if not self.listening.wait(60):
            self.stop()
            pytest.fail("typeset serve did not start listening: " + " | ".join(self.log))
        self.base_url = f"http://127.0.0.1:{self.port}"

    def _read_log(self):
        for line in self.process.stderr:
            self.log.append(line.rstrip())
            found = re.search(r"listening on http://[^:]+:(\d+)", line)
            if found:
                self.port = int(found.group(1))
                self.listening.set()
            if "ready" in line:
                self.ready.set()

    def wait_until_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.base_url + "/health", timeout=5).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        pytest.fail("the model did not load: " + " | ".join(self.log))

    def client(self, **kwargs):
        return openai.OpenAI(base_url=self.base_url + "/v1", api_key=kwargs.pop("api_key", "unused"), max_retries=0, **kwargs)

    @property
    def model(self):
        return httpx.get(self.base_url + "/v1/models", timeout=10).json()["data"][0]["id"]

    def metrics(self):
        values = {}
        for line in httpx.get(self.base_url + "/metrics", timeout=10).text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@pytest.fixture(scope="session")
def smollm2():
    server = Server("smollm2").wait_until_ready()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def qwen():
    server = Server("qwen0.5b").wait_until_ready()
    yield server
    server.stop()


@pytest.fixture
def start_server():
    """Starts servers with extra arguments; stops them after the test."""
    started = []

    def start(*arguments, model="smollm2", env=None, ready=True):
        server = Server(model, *arguments, env=env)
        started.append(server)
        return server.wait_until_ready() if ready else server

    yield start
    for server in started:
        server.stop()
