"""The aiohttp transport under the HTTP providers: closed with its loop, errors in httpx terms."""

from __future__ import annotations

import asyncio
import gc
import http.server
import logging
import os
import shutil
import ssl
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from redline.config import Config
from redline.providers.completion import ChatRequest
from redline.providers.factory import make_provider
from redline.providers.transport import PooledTransport
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
        transport = PooledTransport(connect_timeout_s=2)
        try:
            await transport.handle_async_request(httpx.Request("GET", "http://127.0.0.1:9/"))
        finally:
            await transport.aclose()

    with pytest.raises(httpx.ConnectError, match=r"cannot connect to 127\.0\.0\.1:9"):
        asyncio.run(go())


_HTTPS_PROBE = """
import asyncio, sys, httpx
from redline.providers.transport import PooledTransport

async def go():
    transport = PooledTransport(connect_timeout_s=5)
    try:
        answer = await transport.handle_async_request(httpx.Request("GET", sys.argv[1]))
        print(answer.status_code, answer.content.decode())
    except httpx.RequestError as exc:
        print(type(exc).__name__, exc)
    finally:
        await transport.aclose()

asyncio.run(go())
"""


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
    """aiohttp's own default SSL contexts are built without CA certificates (start-up
    speed): https must still verify against httpx's trust store, SSL_CERT_FILE included."""
    url, cert = https_server
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}

    def probe(extra: dict[str, str]) -> str:
        done = subprocess.run(
            [sys.executable, "-c", _HTTPS_PROBE, url],
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout.strip() or done.stderr

    assert probe({"SSL_CERT_FILE": str(cert)}) == "200 hello"
    refused = probe({})
    assert refused.startswith("ConnectError"), refused
    assert "certificate" in refused.lower()


def test_importing_the_transport_leaves_default_ssl_contexts_with_their_ca_store() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ssl, redline.providers.transport; "
            "print(ssl.create_default_context().cert_store_stats()['x509_ca'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    fresh = ssl.create_default_context().cert_store_stats()["x509_ca"]
    assert int(done.stdout) == fresh
