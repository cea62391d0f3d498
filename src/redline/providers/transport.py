"""httpx's request and response types over a small keep-alive HTTP/1.1 client.

httpx stays the client API of the HTTP providers (its `Request`, `Response`
and exception types), but its default transport costs several times the CPU
of the request itself once many requests are in flight: httpcore re-checks
every pooled connection on every request and release (quadratic in the
concurrency). A provider sends one small JSON body and reads one JSON answer
per request, so this transport does only that: an asyncio protocol per
connection, llhttp (httptools) to parse the answer in C, idle connections
kept per origin. It imports in a few milliseconds (aiohttp, which it
replaces, took a quarter of a second before the first request could leave).

Failures keep httpx's classes so the retry loop and its messages do not
change: a reset is an `httpx.ReadError`, an answer cut off or a connection
dropped before the answer is complete is an `httpx.RemoteProtocolError`,
never a timeout. Proxies come from the environment (HTTP_PROXY, HTTPS_PROXY,
NO_PROXY) as httpx reads them: plain http through the proxy, https through a
CONNECT tunnel.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import ssl
import urllib.parse
import urllib.request
from collections.abc import AsyncGenerator
from dataclasses import dataclass

import httptools
import httpx

_NO_BODY_STATUSES = frozenset({204, 304})
_CONNECT_DEADLINE_S = 10.0


@dataclass(frozen=True)
class _Origin:
    scheme: str
    host: str
    port: int


@dataclass(frozen=True)
class _Route:
    """Where a request's connection goes: straight to its origin, or through a proxy."""

    origin: _Origin
    proxy: _Origin | None = None
    proxy_auth: str | None = None

    @property
    def tunnelled(self) -> bool:
        return self.proxy is not None and self.origin.scheme == "https"


class _Answer:
    """One response as it arrives: status, raw headers, body chunks."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.framed = False  # a Content-Length or chunked encoding says where the body ends
        self.headers_done = False


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: one request at a time, reused while the server allows it."""

    def __init__(self, route: _Route) -> None:
        self.route = route
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser = httptools.HttpResponseParser(self)
        self._answer: _Answer | None = None
        self._waiter: asyncio.Future[_Answer] | None = None
        self._keep_alive = False

    # asyncio.Protocol ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"the server sent a malformed answer: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        answer, waiter = self._answer, self._waiter
        if waiter is None or waiter.done() or answer is None:
            return
        if exc is None and answer.headers_done and not answer.framed:
            waiter.set_result(answer)  # a body delimited by the end of the connection
        elif isinstance(exc, OSError):
            detail = exc.strerror or str(exc) or "the connection was reset"
            waiter.set_exception(httpx.ReadError(detail))
        elif answer.headers_done:
            waiter.set_exception(
                httpx.RemoteProtocolError(
                    "the response body was cut off: the server closed the connection"
                )
            )
        else:
            waiter.set_exception(
                httpx.RemoteProtocolError(
                    "the server closed the connection without sending a complete response"
                )
            )

    # httptools callbacks -----------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        assert self._answer is not None
        self._answer.headers.append((name, value))
        lowered = name.lower()
        if lowered == b"content-length" or (
            lowered == b"transfer-encoding" and b"chunked" in value.lower()
        ):
            self._answer.framed = True

    def on_headers_complete(self) -> None:
        answer = self._answer
        assert answer is not None
        answer.status = self._parser.get_status_code()
        answer.headers_done = True
        if answer.status in _NO_BODY_STATUSES or answer.status < 200:
            answer.framed = True

    def on_body(self, body: bytes) -> None:
        assert self._answer is not None
        self._answer.chunks.append(body)

    def on_message_complete(self) -> None:
        if self._waiter is not None and not self._waiter.done() and self._answer is not None:
            if self._answer.status < 200:
                self._answer = _Answer()  # an interim answer (100 Continue): the real one follows
                return
            # Read now: the parser forgets it once it resets for the next message.
            self._keep_alive = self._parser.should_keep_alive()
            self._waiter.set_result(self._answer)

    # use -------------------------------------------------------------------------------

    async def exchange(self, head: bytes, body: bytes) -> _Answer:
        """Send one request; the complete answer, or the httpx error that ended it."""
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        self._answer, self._waiter = _Answer(), loop.create_future()
        self._keep_alive = False
        self.transport.write(head + body)
        try:
            answer = await self._waiter
        finally:
            self._waiter = None
        return answer

    @property
    def reusable(self) -> bool:
        return not self.closed and self._keep_alive

    def _fail(self, exc: Exception) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class PooledTransport(httpx.AsyncBaseTransport):
    """Keep-alive connections per origin, opened on the event loop that uses them.

    A provider can outlive an event loop (`asyncio.run` twice): its idle connections
    are closed by the loop's own shutdown (`shutdown_asyncgens`, which `asyncio.run`
    calls) and new ones are opened on the next loop. `connect_timeout_s` bounds
    opening a connection; the caller bounds the whole request (`asyncio.timeout`).
    """

    def __init__(self, *, connect_timeout_s: float | None = None) -> None:
        self._connect_timeout_s = connect_timeout_s or _CONNECT_DEADLINE_S
        self._idle: dict[_Route, list[_Connection]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        route = _route(request.url)
        head, body = _request_bytes(request, route, await request.aread())
        connection = await self._checkout(route, request)
        try:
            answer = await connection.exchange(head, body)
        except httpx.TransportError as exc:
            connection.close()
            raise _with_request(exc, request) from None
        except BaseException:
            connection.close()  # cancelled mid-answer: the connection's state is unknown
            raise
        if connection.reusable:
            self._idle.setdefault(route, []).append(connection)
        else:
            connection.close()
        return httpx.Response(
            answer.status,
            headers=answer.headers,
            content=b"".join(answer.chunks),
            request=request,
        )

    async def _checkout(self, route: _Route, request: httpx.Request) -> _Connection:
        await self._bind_loop()
        idle = self._idle.get(route)
        while idle:
            connection = idle.pop()
            if not connection.closed:
                return connection
        return await self._connect(route, request)

    async def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        self._idle = {}  # connections of a finished loop were closed by its shutdown
        self._loop = loop
        self._closer = _close_at_loop_shutdown(self._idle)
        await anext(self._closer)

    async def _connect(self, route: _Route, request: httpx.Request) -> _Connection:
        loop = asyncio.get_running_loop()
        target = route.proxy or route.origin
        connection = _Connection(route)
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                if route.tunnelled:
                    await _open_tunnel(loop, connection, route)
                else:
                    tls = _certificates() if target.scheme == "https" else None
                    await loop.create_connection(
                        lambda: connection,
                        target.host,
                        target.port,
                        ssl=tls,
                        server_hostname=target.host if tls is not None else None,
                    )
        except TimeoutError:
            connection.close()
            raise httpx.ConnectTimeout(
                f"connecting to {target.host}:{target.port} took longer than "
                f"{self._connect_timeout_s:g} s",
                request=request,
            ) from None
        except (OSError, ssl.SSLError) as exc:
            connection.close()
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise httpx.ConnectError(
                f"cannot connect to {target.host}:{target.port}: {reason}", request=request
            ) from exc
        except httpx.ConnectError as exc:
            connection.close()
            raise _with_request(exc, request) from None
        return connection

    async def aclose(self) -> None:
        closer, self._closer = self._closer, None
        if closer is not None and self._loop is asyncio.get_running_loop():
            await closer.aclose()  # its `finally` closes the idle connections
        self._idle = {}


def _with_request(exc: httpx.TransportError, request: httpx.Request) -> httpx.TransportError:
    exc.request = request
    return exc


async def _close_at_loop_shutdown(
    idle: dict[_Route, list[_Connection]],
) -> AsyncGenerator[None, None]:
    """Suspended until its loop shuts down its async generators; then closes `idle`."""
    try:
        yield
    finally:
        for connections in idle.values():
            for connection in connections:
                connection.close()
        idle.clear()


class _TunnelOpening(asyncio.Protocol):
    """Reads the proxy's answer to CONNECT, up to the blank line that ends it."""

    def __init__(self, answered: asyncio.Future[bytes]) -> None:
        self._answered = answered
        self._head = b""

    def data_received(self, data: bytes) -> None:
        self._head += data
        if b"\r\n\r\n" in self._head and not self._answered.done():
            self._answered.set_result(self._head)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._answered.done():
            self._answered.set_exception(
                httpx.ConnectError("the proxy closed the connection during CONNECT")
            )


async def _open_tunnel(
    loop: asyncio.AbstractEventLoop, connection: _Connection, route: _Route
) -> None:
    """CONNECT through the proxy, then TLS to the origin inside the tunnel."""
    assert route.proxy is not None
    answered: asyncio.Future[bytes] = loop.create_future()
    raw, _ = await loop.create_connection(
        lambda: _TunnelOpening(answered), route.proxy.host, route.proxy.port
    )
    authority = f"{route.origin.host}:{route.origin.port}"
    head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
    if route.proxy_auth:
        head += f"Proxy-Authorization: {route.proxy_auth}\r\n"
    raw.write((head + "\r\n").encode("latin-1"))
    try:
        status_line = (await answered).split(b"\r\n", 1)[0].decode("latin-1")
    except BaseException:
        raw.close()
        raise
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or parts[1] != "200":
        raw.close()
        raise httpx.ConnectError(f"the proxy refused the tunnel to {authority}: {status_line}")
    raw.set_protocol(connection)
    try:
        tls = await loop.start_tls(
            raw, connection, _certificates(), server_hostname=route.origin.host
        )
    except BaseException:
        raw.close()
        raise
    if tls is None:
        raise httpx.ConnectError(f"TLS inside the tunnel to {authority} did not start")
    connection.connection_made(tls)


def _request_bytes(request: httpx.Request, route: _Route, body: bytes) -> tuple[bytes, bytes]:
    """The request line and headers as they go on the wire, and the body."""
    url = request.url
    if route.proxy is not None and not route.tunnelled:
        target = str(url).encode("ascii")  # absolute form, for the proxy
    else:
        target = url.raw_path
    lines = [request.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        lines += [name, b": ", value, b"\r\n"]
    if body and "content-length" not in request.headers:
        lines.append(f"Content-Length: {len(body)}\r\n".encode("ascii"))
    if route.proxy_auth and not route.tunnelled:
        lines.append(f"Proxy-Authorization: {route.proxy_auth}\r\n".encode("latin-1"))
    lines.append(b"\r\n")
    return b"".join(lines), body


def _route(url: httpx.URL) -> _Route:
    scheme = url.scheme
    if scheme not in ("http", "https"):
        raise httpx.UnsupportedProtocol(
            f"the URL {str(url)!r} is not http or https: check the provider's base_url"
        )
    port = url.port or (443 if scheme == "https" else 80)
    origin = _Origin(scheme, url.host, port)
    proxy = _proxies().get(scheme)
    if proxy is None or urllib.request.proxy_bypass(url.host):
        return _Route(origin)
    return _proxy_route(origin, proxy)


@functools.cache
def _proxy_route(origin: _Origin, proxy_url: str) -> _Route:
    parsed = urllib.parse.urlsplit(proxy_url if "://" in proxy_url else f"http://{proxy_url}")
    if parsed.scheme != "http" or parsed.hostname is None:
        raise httpx.UnsupportedProtocol(
            f"proxy {proxy_url!r}: only http:// proxies are supported; "
            "set HTTP_PROXY/HTTPS_PROXY to an http:// proxy address"
        )
    auth = None
    if parsed.username is not None:
        user = urllib.parse.unquote(parsed.username)
        secret = urllib.parse.unquote(parsed.password or "")
        auth = "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode("ascii")
    proxy = _Origin("http", parsed.hostname, parsed.port or 80)
    return _Route(origin, proxy, auth)


@functools.cache
def _proxies() -> dict[str, str]:
    return urllib.request.getproxies()


@functools.cache
def _certificates() -> ssl.SSLContext:
    """httpx's trust store (certifi, or SSL_CERT_FILE / SSL_CERT_DIR), built once."""
    return httpx.create_ssl_context()
