"""httpx's request and response types over aiohttp's connection pool.

httpx stays the client API of the HTTP providers (its `Request`, `Response`
and exception types), but its default transport costs several times the CPU
of the request itself once many requests are in flight: httpcore re-checks
every pooled connection on every request and release (quadratic in the
concurrency). aiohttp's connector keeps idle connections in a queue and
parses HTTP in C. This transport sends an httpx `Request` over it, reads the
whole body, and maps aiohttp's failures onto httpx's exception classes so the
retry loop and its messages do not change: a reset or a dropped connection is
an `httpx.ReadError`/`RemoteProtocolError`, never a timeout.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import sys
import urllib.request
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager

import httpx


@contextmanager
def _without_default_certificates() -> Iterator[None]:
    """SSL contexts made inside load no CA store (only while aiohttp imports).

    aiohttp builds two default SSL contexts when it is imported, loading the system CA
    store twice (about a fifth of the CPU the first request of a run needs). This
    transport never uses them: every https request carries httpx's own context (see
    `_certificates`). Left without CA certificates, they could only refuse a server,
    never trust one.
    """
    saved = ssl.SSLContext.load_default_certs, ssl.SSLContext.set_default_verify_paths
    ssl.SSLContext.load_default_certs = lambda self, purpose=None: None  # type: ignore[method-assign]
    ssl.SSLContext.set_default_verify_paths = lambda self: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        ssl.SSLContext.load_default_certs, ssl.SSLContext.set_default_verify_paths = saved  # type: ignore[method-assign]


if "aiohttp" in sys.modules:
    import aiohttp
else:
    with _without_default_certificates():
        import aiohttp


class AiohttpTransport(httpx.AsyncBaseTransport):
    """One aiohttp session per event loop, opened at the loop's first request.

    A provider can outlive an event loop (`asyncio.run` twice): the session is
    closed by the loop's own shutdown (`shutdown_asyncgens`, which `asyncio.run`
    calls) and a new one is opened on the next loop. `connect_timeout_s` bounds
    opening a connection; the caller bounds the whole request (`asyncio.timeout`).
    """

    def __init__(self, *, connect_timeout_s: float | None = None) -> None:
        self._connect_timeout_s = connect_timeout_s
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None

    async def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._session
        if session is not None and self._loop is loop and not session.closed:
            return session
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout_s),
            skip_auto_headers=("User-Agent",),
            cookie_jar=aiohttp.DummyCookieJar(),
            # aiohttp's own trust_env looks proxies and netrc up in a thread on every
            # request; the proxy variables are read here instead (see _env_proxy).
            trust_env=False,
        )
        self._session, self._loop = session, loop
        self._closer = _close_at_loop_shutdown(session)
        await anext(self._closer)
        return session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = await self._open()
        try:
            async with session.request(
                request.method,
                str(request.url),
                headers=request.headers.multi_items(),
                data=request.content or None,
                allow_redirects=False,
                ssl=_certificates() if request.url.scheme == "https" else True,
                proxy=_env_proxy(request.url),
            ) as answer:
                body = await answer.read()
                return httpx.Response(
                    answer.status,
                    headers=answer.raw_headers,
                    content=body,
                    request=request,
                )
        except aiohttp.ClientError as exc:
            raise _as_httpx(exc, request) from exc

    async def aclose(self) -> None:
        closer, self._closer, self._session = self._closer, None, None
        if closer is not None and self._loop is asyncio.get_running_loop():
            await closer.aclose()  # its `finally` closes the session


async def _close_at_loop_shutdown(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Suspended until its loop shuts down its async generators; then closes `session`."""
    try:
        yield
    finally:
        if not session.closed:
            await session.close()


def _env_proxy(url: httpx.URL) -> str | None:
    """The proxy the environment names for `url` (HTTPS_PROXY, NO_PROXY...), as httpx uses."""
    proxy = _proxies().get(url.scheme)
    if proxy is None or urllib.request.proxy_bypass(url.host):
        return None
    return proxy


@functools.cache
def _proxies() -> dict[str, str]:
    return urllib.request.getproxies()


@functools.cache
def _certificates() -> ssl.SSLContext:
    """httpx's trust store (certifi, or SSL_CERT_FILE / SSL_CERT_DIR), built once."""
    return httpx.create_ssl_context()


def _as_httpx(exc: aiohttp.ClientError, request: httpx.Request) -> httpx.RequestError:
    """The httpx exception that says the same thing as an aiohttp failure."""
    detail = str(exc).strip()
    kind: type[httpx.RequestError]
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        kind = httpx.ConnectTimeout
    elif isinstance(exc, aiohttp.ServerTimeoutError):
        kind = httpx.ReadTimeout
    elif isinstance(exc, aiohttp.ClientConnectorError):
        kind = httpx.ConnectError
        reason = exc.os_error.strerror or str(exc.os_error) or type(exc.os_error).__name__
        detail = f"cannot connect to {exc.host}:{exc.port}: {reason}"
    elif isinstance(exc, aiohttp.ServerDisconnectedError):
        kind = httpx.RemoteProtocolError
        detail = "the server closed the connection without sending a complete response"
    elif isinstance(exc, aiohttp.ClientPayloadError):
        kind = httpx.RemoteProtocolError
        detail = detail or "the response body was cut off"
    elif isinstance(exc, aiohttp.ClientResponseError):
        kind = httpx.RemoteProtocolError
        detail = exc.message or detail
    elif isinstance(exc, aiohttp.InvalidURL):
        kind = httpx.UnsupportedProtocol
    elif isinstance(exc, aiohttp.ClientOSError):
        kind = httpx.ReadError
        detail = detail or "the connection was reset"
    else:
        kind = httpx.NetworkError
    return kind(detail or type(exc).__name__, request=request)
