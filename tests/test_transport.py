"""redline's HTTP client (redline.httpio on aiohttp): keep-alive, closed with its loop,
errors in redline's classes, proxies from the environment."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gc
import gzip
import http.server
import json
import logging
import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from redline.config import Config
from redline.httpio import BrokenAnswer, HttpAnswer, HttpClient, HttpPolicy, Unreachable
from redline.providers.factory import make_provider
from redline.vocabulary.completion import ChatRequest
from servers import VALID_JSON, LoopbackLLMServer


def test_a_provider_used_on_two_loops_leaves_no_unclosed_session(
    loopback_config: Config,
    loopback_key: str,
    llm_server: LoopbackLLMServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = make_provider(loopback_config.model("fake"), loopback_config)
    request = ChatRequest(model="fake", system="", user="MODE:json")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = asyncio.run(provider.complete(request))
        second = asyncio.run(provider.complete(request))
        del provider
        gc.collect()

    assert (first.text, second.text) == (VALID_JSON, VALID_JSON)
    assert not [w for w in caught if "Unclosed" in str(w.message)]
    assert "Unclosed" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_refused_connection_is_a_connect_error_naming_the_address() -> None:
    async def go() -> None:
        client = HttpClient(HttpPolicy(timeout_s=2))
        try:
            await client.request("GET", "http://127.0.0.1:9/")
        finally:
            await client.aclose()

    with pytest.raises(Unreachable, match=r"cannot connect to http://127\.0\.0\.1:9/"):
        asyncio.run(go())


_GET_PROBE = """
import asyncio, sys
from redline.httpio import HttpClient, HttpFailure, HttpPolicy

async def go():
    client = HttpClient(HttpPolicy(timeout_s=5))
    try:
        answer = await client.request("GET", sys.argv[1])
        print(answer.status, answer.body.decode())
    except HttpFailure as exc:
        print(type(exc).__name__, exc)
    finally:
        await client.aclose()

asyncio.run(go())
"""


def get_in_subprocess(url: str, env: dict[str, str]) -> str:
    """GET `url` through a fresh HttpClient in a new process whose environment has no
    proxy or certificate settings but `env`; "status body", or "ErrorClass message"."""
    own = ("SSL_CERT_FILE", "SSL_CERT_DIR")
    base = {k: v for k, v in os.environ.items() if k not in own and "proxy" not in k.lower()}
    done = subprocess.run(
        [sys.executable, "-c", _GET_PROBE, url],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.strip() or done.stderr


@pytest.fixture
def https_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A TLS loopback server with a self-signed certificate for 127.0.0.1; its URL and cert."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )

    class Hello(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "5")
            self.end_headers()
            self.wfile.write(b"hello")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/", cert
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_https_trusts_the_configured_certificates_and_refuses_others(
    https_server: tuple[str, Path],
) -> None:
    """https verifies against the default trust store with SSL_CERT_FILE added."""
    url, cert = https_server
    assert get_in_subprocess(url, {"SSL_CERT_FILE": str(cert)}) == "200 hello"
    refused = get_in_subprocess(url, {})
    assert refused.startswith("Unreachable"), refused
    assert "certificate" in refused.lower()


def test_importing_the_transport_leaves_default_ssl_contexts_with_their_ca_store() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ssl, redline.httpio; redline.httpio.trust(); "
            "print(ssl.create_default_context().cert_store_stats()['x509_ca'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    fresh = ssl.create_default_context().cert_store_stats()["x509_ca"]
    assert int(done.stdout) == fresh


# --- the wire: a scripted raw-socket server --------------------------------------------


class RawServer:
    """Accepts connections on 127.0.0.1 and runs `serve(connection, number)` for each."""

    def __init__(self, serve: Callable[[socket.socket, int], None]) -> None:
        self._serve = serve
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1/x"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            number = self.connections
            threading.Thread(target=self._run, args=(connection, number), daemon=True).start()

    def _run(self, connection: socket.socket, number: int) -> None:
        with connection:
            self._serve(connection, number)

    def close(self) -> None:
        self._listener.close()


def read_request(connection: socket.socket) -> bytes:
    """One request (head and Content-Length body), or b"" when the client closed (or reset:
    a client that stops a run may drop its connections without reading them out)."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = connection.recv(65536)
        except ConnectionResetError:
            return b""
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        body += connection.recv(65536)
    return head + b"\r\n\r\n" + body


def ok(body: bytes, *headers: str) -> bytes:
    extra = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def post(
    url: str, client: HttpClient | None = None, count: int = 1, **options: object
) -> list[HttpAnswer]:
    """`count` POSTs in a row through one client (closed afterwards), as a provider sends."""

    async def go() -> list[HttpAnswer]:
        used = client or HttpClient(HttpPolicy(timeout_s=5))
        try:
            answers = []
            for n in range(count):
                body = json.dumps({"n": n}).encode()
                answers.append(await used.request("POST", url, body=body, **options))  # type: ignore[arg-type]
            return answers
        finally:
            await used.aclose()

    return asyncio.run(go())


@pytest.fixture
def raw_server() -> Iterator[Callable[[Callable[[socket.socket, int], None]], RawServer]]:
    started: list[RawServer] = []

    def start(serve: Callable[[socket.socket, int], None]) -> RawServer:
        server = RawServer(serve)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


ServerFactory = Callable[[Callable[[socket.socket, int], None]], RawServer]


def test_kept_alive_connections_carry_many_requests(raw_server: ServerFactory) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        while request := read_request(connection):
            connection.sendall(ok(b'{"seen": %d}' % len(request)))

    server = raw_server(serve)
    answers = post(server.url, count=5)
    assert [a.status for a in answers] == [200] * 5
    assert server.connections == 1


def test_a_connection_the_server_closed_while_idle_is_replaced_without_an_error(
    raw_server: ServerFactory,
) -> None:
    """A kept-alive connection the server dropped between two requests is not a failure."""

    def serve(connection: socket.socket, _: int) -> None:
        if read_request(connection):
            connection.sendall(ok(b"first"))  # keep-alive, then gone without a word

    server = raw_server(serve)

    async def go() -> list[bytes]:
        client = HttpClient(HttpPolicy(timeout_s=5))
        try:
            first = await client.request("POST", server.url)
            await asyncio.sleep(0.2)  # the server's close arrives while the connection is idle
            second = await client.request("POST", server.url)
            return [first.body, second.body]
        finally:
            await client.aclose()

    assert asyncio.run(go()) == [b"first", b"first"]
    assert server.connections == 2


def test_chunked_answers_and_answers_ended_by_closing_are_read_whole(
    raw_server: ServerFactory,
) -> None:
    def serve(connection: socket.socket, number: int) -> None:
        read_request(connection)
        if number == 1:
            connection.sendall(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
            )
            read_request(connection)
        else:
            connection.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end")

    server = raw_server(serve)
    assert post(server.url)[0].body == b"hello world"
    assert post(server.url)[0].body == b"until the end"


def test_a_gzip_answer_is_decoded_when_asked_for_and_refused_when_not(
    raw_server: ServerFactory,
) -> None:
    body = gzip.compress(b'{"ok": true}')
    asked: list[bytes] = []

    def serve(connection: socket.socket, _: int) -> None:
        asked.append(read_request(connection))
        connection.sendall(ok(body, "Content-Encoding: gzip"))

    server = raw_server(serve)
    assert post(server.url, decompress=True)[0].json() == {"ok": True}
    assert b"accept-encoding: gzip, deflate" in asked[0].lower()
    with pytest.raises(BrokenAnswer, match="gzip-encoded answer redline did not ask for"):
        post(server.url)
    assert b"accept-encoding" not in asked[1].lower()


def test_the_request_goes_out_as_built(raw_server: ServerFactory) -> None:
    seen: list[bytes] = []

    def serve(connection: socket.socket, _: int) -> None:
        seen.append(read_request(connection))
        connection.sendall(ok(b"{}"))

    server = raw_server(serve)
    post(server.url + "?q=1")
    head, _, body = seen[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/x?q=1 HTTP/1.1"
    assert f"host: 127.0.0.1:{server.port}".encode() in [line.lower() for line in lines]
    assert f"content-length: {len(body)}".encode() in [line.lower() for line in lines]
    assert json.loads(body) == {"n": 0}


@pytest.mark.parametrize(
    ("answer", "error", "message"),
    [
        (ok(b"0123456789")[:-4], BrokenAnswer, "cut off"),
        (b"", BrokenAnswer, "without a complete answer"),
        (b"SMTP ready\r\n\r\n", BrokenAnswer, "malformed"),
    ],
    ids=["body cut off", "closed before answering", "not HTTP"],
)
def test_broken_answers_are_protocol_errors_not_timeouts(
    raw_server: ServerFactory, answer: bytes, error: type[Exception], message: str
) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        read_request(connection)
        connection.sendall(answer)

    with pytest.raises(error, match=message):
        post(raw_server(serve).url)


def test_a_reset_connection_is_a_broken_answer(raw_server: ServerFactory) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        read_request(connection)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    with pytest.raises(BrokenAnswer):
        post(raw_server(serve).url)


def test_a_request_cancelled_mid_answer_does_not_leave_its_connection_for_the_next(
    raw_server: ServerFactory,
) -> None:
    """The late answer of a cancelled request must never be read as the next one's."""

    def serve(connection: socket.socket, _: int) -> None:
        while request := read_request(connection):
            if b'"slow"' in request:
                time.sleep(0.5)
                connection.sendall(ok(b"slow answer"))
            else:
                connection.sendall(ok(b"fast answer"))

    server = raw_server(serve)

    async def go() -> bytes:
        client = HttpClient(HttpPolicy(timeout_s=5))
        try:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.1):
                    await client.request("POST", server.url, body=b'"slow"')
            answer = await client.request("POST", server.url, body=b'"fast"')
            return answer.body
        finally:
            await client.aclose()

    assert asyncio.run(go()) == b"fast answer"
    assert server.connections == 2


# --- proxies from the environment ----------------------------------------------------------


class Proxy:
    """A forward proxy on 127.0.0.1: plain requests forwarded, CONNECT tunnelled."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[bytes] = []
        self._tls = tls
        self._listener = socket.create_server(("127.0.0.1", 0))
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://user:pa%40ss@127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
                if self._tls is not None:
                    client = self._tls.wrap_socket(client, server_side=True)
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            request = read_request(client)
            self.requests.append(request)
            line = request.split(b"\r\n", 1)[0].decode()
            method, target, _ = line.split(" ")
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                _pipe(client, upstream)
                return
            url = urlsplit(target)
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            with socket.create_connection((url.hostname or "", url.port or 80)) as upstream:
                upstream.sendall(request.replace(target.encode(), path.encode(), 1))
                client.sendall(upstream.recv(65536))

    def close(self) -> None:
        self._listener.close()


def _pipe(a: socket.socket, b: socket.socket) -> None:
    def copy(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)  # the other side sees the end (close() would not)

    back = threading.Thread(target=copy, args=(b, a), daemon=True)
    back.start()
    copy(a, b)
    back.join(timeout=10)
    b.close()


def test_plain_http_goes_through_the_proxy_the_environment_names(
    raw_server: ServerFactory,
) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        read_request(connection)
        connection.sendall(ok(b"via proxy"))

    server, proxy = raw_server(serve), Proxy()
    try:
        # NO_PROXY is cleared: loopback addresses bypass no proxy unless told to.
        assert get_in_subprocess(server.url, {"HTTP_PROXY": proxy.url}) == "200 via proxy"
        sent = proxy.requests[0]
        assert sent.startswith(f"GET {server.url} HTTP/1.1".encode())
        assert b"Proxy-Authorization: Basic " + base64.b64encode(b"user:pa@ss") in sent
        direct = get_in_subprocess(server.url, {"HTTP_PROXY": proxy.url, "NO_PROXY": "127.0.0.1"})
        assert direct == "200 via proxy"
        assert len(proxy.requests) == 1  # NO_PROXY: straight to the server
    finally:
        proxy.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_https_goes_through_a_connect_tunnel_and_still_verifies_the_origin(
    https_server: tuple[str, Path],
) -> None:
    url, cert = https_server
    proxy = Proxy()
    try:
        trusted = get_in_subprocess(url, {"HTTPS_PROXY": proxy.url, "SSL_CERT_FILE": str(cert)})
        assert trusted == "200 hello"
        port = urlsplit(url).port
        assert proxy.requests[0].startswith(f"CONNECT 127.0.0.1:{port} HTTP/1.1".encode())
        refused = get_in_subprocess(url, {"HTTPS_PROXY": proxy.url})
        assert refused.startswith("Unreachable") and "certificate" in refused.lower(), refused
    finally:
        proxy.close()


class Socks5:
    """A SOCKS5 proxy on 127.0.0.1 that wants a username and password (RFC 1928, 1929)."""

    def __init__(self, user: bytes = b"suser", password: bytes = b"s0cks-S3CRET") -> None:
        self.user, self.password = user, password
        self.seen: list[tuple[bytes, bytes, str]] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        port = self._listener.getsockname()[1]
        self.url = f"socks5://{user.decode()}:{password.decode()}@127.0.0.1:{port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            _, count = client.recv(2)
            if 2 not in client.recv(count):
                client.sendall(b"\x05\xff")
                return
            client.sendall(b"\x05\x02")  # username/password
            _, length = client.recv(2)
            user = client.recv(length)
            (length,) = client.recv(1)
            password = client.recv(length)
            if (user, password) != (self.user, self.password):
                client.sendall(b"\x01\x01")
                return
            client.sendall(b"\x01\x00")
            _, _, _, kind = client.recv(4)
            if kind == 1:
                host = socket.inet_ntoa(client.recv(4))
            else:
                (length,) = client.recv(1)
                host = client.recv(length).decode()
            (port,) = struct.unpack("!H", client.recv(2))
            self.seen.append((user, password, f"{host}:{port}"))
            upstream = socket.create_connection((host, port))
            client.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + b"\x00\x00")
            _pipe(client, upstream)

    def close(self) -> None:
        self._listener.close()


def test_a_socks5_proxy_with_credentials_carries_the_request(raw_server: ServerFactory) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        read_request(connection)
        connection.sendall(ok(b"via socks"))

    server, proxy = raw_server(serve), Socks5()
    try:
        assert get_in_subprocess(server.url, {"ALL_PROXY": proxy.url}) == "200 via socks"
        assert proxy.seen == [(b"suser", b"s0cks-S3CRET", f"127.0.0.1:{server.port}")]
        wrong = proxy.url.replace("s0cks-S3CRET", "wrong-pass")
        refused = get_in_subprocess(server.url, {"ALL_PROXY": wrong})
        assert refused.startswith("Unreachable") and "proxy" in refused, refused
        assert "wrong-pass" not in refused
    finally:
        proxy.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_an_https_proxy_is_reached_over_tls_it_trusts(
    raw_server: ServerFactory, https_server: tuple[str, Path]
) -> None:
    def serve(connection: socket.socket, _: int) -> None:
        read_request(connection)
        connection.sendall(ok(b"via https proxy"))

    _, cert = https_server
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, cert.with_name("key.pem"))
    server, proxy = raw_server(serve), Proxy(tls=context)
    try:
        env = {"HTTP_PROXY": proxy.url, "SSL_CERT_FILE": str(cert)}
        assert get_in_subprocess(server.url, env) == "200 via https proxy"
        assert b"Proxy-Authorization: Basic " + base64.b64encode(b"user:pa@ss") in proxy.requests[0]
        refused = get_in_subprocess(server.url, {"HTTP_PROXY": proxy.url})
        assert refused.startswith("Unreachable") and "pa%40ss" not in refused, refused
    finally:
        proxy.close()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_a_ca_bundle_adds_a_company_ca_to_the_trusted_ones(
    https_server: tuple[str, Path],
) -> None:
    url, cert = https_server

    async def get(policy: HttpPolicy) -> int:
        client = HttpClient(policy)
        try:
            return (await client.request("GET", url)).status
        finally:
            await client.aclose()

    assert asyncio.run(get(HttpPolicy(timeout_s=5, ca_bundle=cert))) == 200
    with pytest.raises(Unreachable, match=r"certificate of https://127\.0\.0\.1"):
        asyncio.run(get(HttpPolicy(timeout_s=5)))
