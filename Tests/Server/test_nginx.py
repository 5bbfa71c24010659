"""Past one machine: two `typeset serve` processes behind nginx (Debian's package) on loopback,
with sticky routing by a session header so a conversation's requests reach the server that
holds its prefix, the others spread, streaming passed through, and a failed server skipped.
The configuration is the one docs/serving.md documents."""
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from conftest import Server

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
REQUIRED = os.environ.get("TYPESET_REQUIRE_NGINX") == "1"
pytestmark = pytest.mark.skipif(NGINX is None and not REQUIRED, reason="nginx is not installed (apt-get install nginx)")

CONFIGURATION = """
worker_processes 1;
daemon off;
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;

    # Requests of one conversation carry the same X-Session-Id and go to the same server,
    # whose KV cache still holds the conversation's prefix; the others spread.
    map $http_x_session_id $typeset_route {{
        ""      $request_id;
        default $http_x_session_id;
    }}
    upstream typeset {{
        hash $typeset_route consistent;
        server 127.0.0.1:{first} max_fails=1 fail_timeout=10s;
        server 127.0.0.1:{second} max_fails=1 fail_timeout=10s;
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 8m;
        location / {{
            proxy_pass http://typeset;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 600s;
            proxy_next_upstream error timeout http_502 http_503;
            add_header X-Typeset-Upstream $upstream_addr always;
        }}
    }}
}}
"""


def free_port():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return listener.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    if NGINX is None:
        pytest.fail("nginx is required (TYPESET_REQUIRE_NGINX=1) but not installed")
    servers = [Server("smollm2"), Server("smollm2")]
    for server in servers:
        server.wait_until_ready()
    directory = Path(tempfile.mkdtemp(prefix="typeset-nginx-"))
    port = free_port()
    (directory / "nginx.conf").write_text(CONFIGURATION.format(
        directory=directory, first=servers[0].port, second=servers[1].port, port=port))
    nginx = subprocess.Popen([NGINX, "-c", str(directory / "nginx.conf"), "-p", str(directory)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            nginx.kill()
            pytest.fail("nginx did not start: " + (directory / "error.log").read_text() if (directory / "error.log").exists() else "")
        time.sleep(0.05)
    yield base, servers
    nginx.terminate()
    nginx.wait(10)
    for server in servers:
        server.stop()
    shutil.rmtree(directory, ignore_errors=True)


def chat(base, messages, session=None, **fields):
    headers = {"X-Session-Id": session} if session else {}
    response = httpx.post(base + "/v1/chat/completions", json={"messages": messages, "temperature": 0, **fields},
                          headers=headers, timeout=120)
    assert response.status_code == 200, response.text
    return response


def test_a_conversation_stays_on_its_server_and_reuses_its_prefix(cluster):
    base, servers = cluster
    messages = [{"role": "system", "content": "You are a helpful assistant. " * 20}, {"role": "user", "content": "What is rain?"}]
    upstreams = set()
    for turn in range(3):
        response = chat(base, messages, session="conversation-1", max_tokens=24)
        upstreams.add(response.headers["X-Typeset-Upstream"])
        reply = response.json()
        if turn > 0:
            # The earlier turns were computed on this server: only the new messages are.
            assert reply["usage"]["prompt_tokens_details"]["cached_tokens"] > 100
        messages += [reply["choices"][0]["message"], {"role": "user", "content": f"And question {turn + 2}?"}]
    assert len(upstreams) == 1


def test_sessions_spread_over_both_servers(cluster):
    base, servers = cluster
    upstreams = {chat(base, [{"role": "user", "content": "Hi"}], session=f"session-{index}", max_tokens=2).headers["X-Typeset-Upstream"]
                 for index in range(16)}
    assert upstreams == {f"127.0.0.1:{server.port}" for server in servers}


def test_streaming_passes_through(cluster):
    base, _ = cluster
    with httpx.stream("POST", base + "/v1/chat/completions", timeout=120, json={
        "messages": [{"role": "user", "content": "Tell me about the sea."}], "max_tokens": 30, "temperature": 0, "stream": True,
    }) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]" and len(events) > 5


def test_a_failed_server_is_skipped(cluster):
    base, servers = cluster
    servers[1].stop()
    for index in range(8):
        response = chat(base, [{"role": "user", "content": "Hi"}], session=f"other-{index}", max_tokens=2)
        assert response.headers["X-Typeset-Upstream"].endswith(str(servers[0].port))
