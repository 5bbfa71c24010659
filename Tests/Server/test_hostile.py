"""Hostile HTTP: what a slow, broken or malicious client does to the server, each case bounded
in time and memory while a well-behaved client beside it gets its replies as usual. Raw
sockets, since no HTTP client misbehaves on purpose.

The server runs with short timeouts (--body-timeout 2, --idle-timeout 2) so the bounds are
seen in seconds; the defaults are 30 s each."""
import socket
import threading
import time

import httpx
import pytest

from test_limits import SYSTEM

TIMEOUTS = ("--body-timeout", "2", "--idle-timeout", "2")


@pytest.fixture(scope="module")
def server(request):
    from conftest import Server
    started = Server("smollm2", *TIMEOUTS).wait_until_ready()
    yield started
    started.stop()


def connect(server, timeout=30):
    return socket.create_connection(("127.0.0.1", server.port), timeout=timeout)


def closed_within(sock, seconds):
    """Seconds until the server closes `sock` (reading what it sends), or None past `seconds`."""
    sock.settimeout(seconds)
    started = time.monotonic()
    try:
        while sock.recv(65536):
            pass
        return time.monotonic() - started
    except (socket.timeout, TimeoutError):
        return None
    except ConnectionResetError:
        return time.monotonic() - started


def resident_bytes(server):
    return server.metrics()["process_resident_memory_bytes"]


class Bystander:
    """A well-behaved client asking for short replies in a loop; each must succeed quickly."""

    def __init__(self, server):
        self.server, self.latencies, self.failures = server, [], []
        self.running = True
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        body = {"messages": [SYSTEM, {"role": "user", "content": "Say hi."}], "max_tokens": 4, "temperature": 0}
        while self.running:
            started = time.monotonic()
            try:
                response = httpx.post(self.server.base_url + "/v1/chat/completions", json=body, timeout=30)
                if response.status_code != 200:
                    self.failures.append(response.status_code)
            except httpx.HTTPError as error:
                self.failures.append(repr(error))
            self.latencies.append(time.monotonic() - started)

    def stop(self):
        self.running = False
        self.thread.join(60)
        assert not self.failures, self.failures
        assert self.latencies and max(self.latencies) < 10, self.latencies


def test_a_client_trickling_its_headers_is_let_go(server):
    """One byte a second of headers: closed when the idle timeout passes, not held forever."""
    bystander = Bystander(server)
    sock = connect(server)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
    started = time.monotonic()
    closed = False
    for byte in b"Content-Type: application/json\r\nX-Slow: " + b"a" * 20:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            closed = True
            break
        time.sleep(1)
        if closed_within(sock, 0.01) is not None:
            closed = True
            break
    assert closed and time.monotonic() - started < 6
    bystander.stop()


def test_a_megabyte_of_headers_is_refused(server):
    sock = connect(server)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
    sock.settimeout(10)
    answer = sock.recv(200)
    assert answer.startswith(b"HTTP/1.1 4"), answer   # 400 or 431, at once
    assert closed_within(sock, 5) is not None


def test_a_chunked_body_that_never_ends_times_out(server):
    """A body sent a chunk a second, forever: 408 when the body timeout passes, connection
    closed; the memory it took is bounded by what arrived."""
    bystander = Bystander(server)
    sock = connect(server)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    started = time.monotonic()
    answer = b""
    sock.settimeout(0.2)
    while time.monotonic() - started < 10 and b"\r\n\r\n" not in answer:
        try:
            sock.sendall(b"1\r\n{\r\n")
        except OSError:
            break
        try:
            answer += sock.recv(4096)
        except (socket.timeout, TimeoutError):
            pass
        time.sleep(0.2)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert time.monotonic() - started < 5
    assert closed_within(sock, 5) is not None
    bystander.stop()


def test_a_body_that_is_not_utf8_is_refused(server):
    for body in [b'{"messages": "\xff\xfe"}', b"\xc3\x28", b'{"a": "\xed\xa0\x80"}']:
        response = httpx.post(server.base_url + "/v1/chat/completions", content=body, timeout=30,
                              headers={"Content-Type": "application/json"})
        assert response.status_code == 400 and response.json()["error"]["param"] == "body"


def test_ten_thousand_idle_connections(server):
    """10,000 connections opened and left: the server keeps answering, takes a bounded amount
    of memory for them, and closes them all once the idle timeout passes."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 10_500:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 12_000), hard))
    before = resident_bytes(server)
    bystander = Bystander(server)
    sockets = []
    for _ in range(10_000):
        sockets.append(connect(server))
    assert httpx.get(server.base_url + "/health", timeout=10).status_code == 200
    grown = resident_bytes(server) - before
    print(f"10,000 idle connections: {grown / (1 << 20):.1f} MiB more resident memory")
    assert grown < 200 << 20, f"{grown >> 20} MiB for 10,000 idle connections"
    time.sleep(4)   # past the idle timeout
    open_ones = 0
    for sock in sockets:
        sock.settimeout(0.5)
        try:
            if sock.recv(1) != b"":
                open_ones += 1
        except (socket.timeout, TimeoutError):
            open_ones += 1
        except OSError:
            pass
        sock.close()
    assert open_ones == 0, f"{open_ones} of 10,000 idle connections still open past the idle timeout"
    bystander.stop()


def test_clients_vanishing_mid_stream(server):
    """Streams abandoned after their first event: each generation stops (the in-flight count
    goes back to zero), and the bystander is served throughout."""
    bystander = Bystander(server)
    body = b'{"messages": [{"role": "user", "content": "Tell me a long story."}], "max_tokens": 400, "stream": true}'
    for _ in range(8):
        sock = connect(server)
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        sock.settimeout(30)
        assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        sock.close()
    bystander.stop()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and server.metrics()["typeset_requests_in_flight"] > 0:
        time.sleep(0.2)
    assert server.metrics()["typeset_requests_in_flight"] == 0


def test_soak_with_everything_at_once(server):
    """The cases above mixed for 20 seconds while the bystander asks: every reply it gets is
    a 200 within bounds, and the memory the server holds comes back near where it began."""
    before = resident_bytes(server)
    bystander = Bystander(server)
    stop = time.monotonic() + 20
    errors = []

    def slow_headers():
        while time.monotonic() < stop:
            sock = connect(server)
            try:
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
                closed_within(sock, 5)
            finally:
                sock.close()

    def endless_bodies():
        while time.monotonic() < stop:
            sock = connect(server)
            try:
                sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
                for _ in range(20):
                    sock.sendall(b"1\r\n \r\n")
                    time.sleep(0.2)
            except OSError:
                pass
            finally:
                sock.close()

    def vanishing_streams():
        body = b'{"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 200, "stream": true}'
        while time.monotonic() < stop:
            sock = connect(server)
            try:
                sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + str(len(body)).encode()
                             + b"\r\n\r\n" + body)
                sock.recv(1024)
            except OSError as error:
                errors.append(repr(error))
            finally:
                sock.close()
            time.sleep(0.5)

    def garbage():
        while time.monotonic() < stop:
            sock = connect(server)
            try:
                sock.sendall(b"\xff\xfe GARBAGE \x00\x01\r\n\r\n")
                closed_within(sock, 5)
            finally:
                sock.close()
            time.sleep(0.2)

    workers = [threading.Thread(target=work, daemon=True) for work in (slow_headers, endless_bodies, vanishing_streams, garbage)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    bystander.stop()
    assert not errors, errors
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and server.metrics()["typeset_requests_in_flight"] > 0:
        time.sleep(0.2)
    assert server.metrics()["typeset_requests_in_flight"] == 0
    assert resident_bytes(server) - before < 64 << 20
