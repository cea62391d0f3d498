"""Every outbound HTTP call redline makes, on aiohttp, under one policy.

The protocol is aiohttp's (parsing, header limits, CR/LF checks in what is sent,
keep-alive pools, TLS and proxies); this module owns the policy around it:

- one deadline per exchange (`timeout_s`) covering connecting, sending, reading
  and decoding the answer, whatever the server does (a drip, an endless body);
- `max_response_bytes`: a larger body stops being read and its connection is
  closed; compressed answers are asked for only where a caller says so
  (`decompress=True`) and decoded under the same limit and the same deadline;
- trust: the OS trust store (truststore) plus the bundled CAs (certifi), plus
  `SSL_CERT_FILE` / `SSL_CERT_DIR` and a configured `ca_bundle`, added, never
  replacing the defaults;
- proxies from the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
  `NO_PROXY`): http://, https:// and socks5:// (socks4://) proxies, credentials
  in the proxy URL sent to the proxy and never shown;
- failures as a few classes a caller can act on (`HttpFailure` and its kinds), each
  message with every URL's userinfo and every given secret redacted.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import os
import ssl
import sys
import threading
import zlib
from collections.abc import AsyncGenerator, Awaitable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from multidict import CIMultiDictProxy
from yarl import URL

from redline.provider_options import DEFAULT_MAX_RESPONSE_BYTES
from redline.proxies import Proxy, proxy_for
from redline.redaction import redact, redact_url


@contextmanager
def _without_default_certificates() -> Iterator[None]:
    """SSL contexts made inside load no CA store (only while aiohttp imports).

    aiohttp builds two default SSL contexts when it is imported, loading the system CA
    store twice (about a tenth of the CPU the first request of a run needs). redline never
    uses them: every https exchange (and every https proxy) carries `trust()`'s context.
    Left without CA certificates, they could only refuse a server, never trust one.
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

MIB = 1024 * 1024
_CONNECT_TIMEOUT_S = 10.0
_CHUNK = 64 * 1024
_REDIRECTS = (301, 302, 303, 307, 308)
_MAX_REDIRECTS = 5
_T = TypeVar("_T")


class HttpFailure(Exception):
    """An exchange that ended without an answer; the message is redacted and says what failed.

    `unreachable` is True when nothing at the address answered as an HTTP server would
    (refused, DNS, TLS, a proxy that refused the tunnel): retrying the same address
    does not help, checking the address does.
    """

    unreachable = False


class Unreachable(HttpFailure):
    """Connection refused, DNS failure, TLS failure, or a proxy that refused the tunnel."""

    unreachable = True


class ExchangeTimeout(HttpFailure):
    """No complete answer within the exchange's deadline."""


class AnswerTooLarge(HttpFailure):
    """The body (as sent, or once decoded) is larger than `max_response_bytes`."""


class BrokenAnswer(HttpFailure):
    """A reset, a cut-off body, or an answer aiohttp refused to parse (e.g. huge headers)."""


@dataclass(frozen=True)
class HttpPolicy:
    """What bounds one client's exchanges. `ca_bundle` adds CAs to the defaults."""

    timeout_s: float = 60.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    ca_bundle: Path | None = None
    connect_timeout_s: float = _CONNECT_TIMEOUT_S


@dataclass(frozen=True)
class HttpAnswer:
    """A complete answer: status, headers, the whole (decoded) body, where it came from."""

    status: int
    headers: CIMultiDictProxy[str]
    body: bytes
    url: str
    #: `Link` header relations (rel → URL), as GitHub pages its lists.
    links: Mapping[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body)

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class HttpClient:
    """A keep-alive pool and its policy, for one caller (a provider, the CI client, ...).

    A client can outlive an event loop (`asyncio.run` twice): its session belongs to the
    loop that opened it and is closed by that loop's shutdown; the next loop opens its own.
    """

    def __init__(
        self,
        policy: HttpPolicy,
        *,
        headers: Mapping[str, str] | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        self.policy = policy
        self._headers = dict(headers or {})
        self._secrets = tuple(s for s in secrets if s)
        self._sessions: dict[str | None, aiohttp.ClientSession] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        #: The proxy of each origin, read from the environment once per client.
        self._proxies: dict[str, Proxy | None] = {}
        self._timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=min(policy.connect_timeout_s, policy.timeout_s)
        )

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)

    async def request(
        self,
        method: str,
        url: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        decompress: bool = False,
        follow_redirects: bool = False,
        into: IO[bytes] | None = None,
        policy: HttpPolicy | None = None,
    ) -> HttpAnswer:
        """One exchange within the deadline; the answer, or the HttpFailure that ended it.

        A 2xx body goes to `into` when given (the answer's body is then empty); `policy`
        replaces the client's deadline and size limit for this exchange (a large download).
        """
        limits = policy or self.policy
        try:
            async with asyncio.timeout(limits.timeout_s):
                return await self._exchange(
                    method, url, body, headers, params, decompress, follow_redirects, into, limits
                )
        except TimeoutError:
            raise ExchangeTimeout(
                f"timeout: no complete answer from {self._where(url)} within {limits.timeout_s:g} s"
            ) from None

    async def _exchange(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        params: Mapping[str, str] | None,
        decompress: bool,
        follow_redirects: bool,
        into: IO[bytes] | None,
        limits: HttpPolicy,
    ) -> HttpAnswer:
        sent = {**self._headers, **(headers or {})}
        if decompress:
            sent["Accept-Encoding"] = "gzip, deflate"
        url = _credentials_to_header(url, sent)
        for _ in range(_MAX_REDIRECTS + 1):
            session, proxy, proxy_headers = await self._route(url)
            refusals = _socks_refusals() if session is not self._sessions.get(None) else ()
            try:
                out = sent
                if proxy_headers and url.startswith("http:"):
                    out = {**sent, **proxy_headers}  # no tunnel: the proxy reads the request
                async with session.request(
                    method,
                    url,
                    data=body,
                    headers=out,
                    params=params,
                    proxy=proxy,
                    proxy_headers=proxy_headers,
                    allow_redirects=False,
                    ssl=self._tls(url, proxy),
                ) as response:
                    location = response.headers.get("Location")
                    if follow_redirects and response.status in _REDIRECTS and location:
                        url = str(response.url.join(URL(location)))
                        if urlsplit(url).netloc != response.url.raw_authority:
                            sent = {  # credentials never go to another host
                                k: v for k, v in sent.items() if k.lower() != "authorization"
                            }
                        if response.status == 303 or (response.status != 307 and method != "GET"):
                            method, body = "GET", None
                        params = None
                        continue
                    sink = into if 200 <= response.status < 300 else None
                    data = await self._body(response, decompress, sink, limits.max_response_bytes)
                    links = (
                        {str(r): str(link["url"]) for r, link in response.links.items()}
                        if "Link" in response.headers
                        else {}
                    )
                    return HttpAnswer(
                        response.status,
                        response.headers,
                        data,
                        str(response.url),
                        links,
                    )
            except HttpFailure:
                raise
            except refusals as exc:
                raise Unreachable(
                    self.redact(
                        f"the SOCKS proxy refused the connection to {self._where(url)}: {exc}"
                    )
                ) from None
            except aiohttp.ClientError as exc:
                raise self._failure(exc, url) from None
            except OSError as exc:
                raise BrokenAnswer(
                    self.redact(f"{self._where(url)}: {exc.strerror or exc}")
                ) from None
        raise BrokenAnswer(f"{self._where(url)}: more than {_MAX_REDIRECTS} redirects")

    async def _body(
        self,
        response: aiohttp.ClientResponse,
        decompress: bool,
        into: IO[bytes] | None,
        limit: int,
    ) -> bytes:
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        decoder: Any = None
        if encoding not in ("identity", ""):
            if not decompress or encoding not in ("gzip", "deflate", "x-gzip"):
                response.close()
                raise BrokenAnswer(
                    f"{self._where(str(response.url))} sent a {encoding}-encoded answer "
                    "redline did not ask for"
                )
            decoder = zlib.decompressobj(wbits=47)  # gzip or zlib, by the header
        length = response.content_length
        if length is not None and decoder is None:
            if length > limit:
                response.close()
                raise self._too_large(response, limit)
            if into is None:
                return await response.read()  # aiohttp reads exactly `length` bytes
        parts: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(_CHUNK):
            if decoder is not None:
                chunk = decoder.decompress(chunk, limit - size + 1)
                if decoder.unconsumed_tail:
                    size = limit + 1  # more decoded bytes wait: the answer is too large
            size += len(chunk)
            if size > limit:
                response.close()
                raise self._too_large(response, limit)
            if into is not None:
                into.write(chunk)
            else:
                parts.append(chunk)
        if decoder is not None:
            tail = decoder.flush(limit - size + 1)
            if size + len(tail) > limit:
                raise self._too_large(response, limit)
            parts.append(tail)
        return b"".join(parts)

    def _tls(self, url: str, proxy: str | None) -> ssl.SSLContext | bool:
        """redline's trust for an https origin or proxy; aiohttp's default (unused) else."""
        if url.startswith("https:") or (proxy or "").startswith("https:"):
            return trust(self.policy.ca_bundle)
        return True

    def _too_large(self, response: aiohttp.ClientResponse, limit: int) -> AnswerTooLarge:
        return AnswerTooLarge(
            f"answer larger than {_size(limit)} from {self._where(str(response.url))} "
            f"(max_response_bytes = {limit})"
        )

    def _failure(self, exc: aiohttp.ClientError, url: str) -> HttpFailure:
        where = self._where(url)
        if isinstance(exc, aiohttp.ClientHttpProxyError):
            return Unreachable(f"the proxy refused the connection to {where}: HTTP {exc.status}")
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            reason = getattr(exc.certificate_error, "verify_message", "") or exc.certificate_error
            return Unreachable(
                self.redact(f"TLS: the certificate of {where} is not trusted ({reason})")
            )
        if isinstance(exc, aiohttp.ClientConnectorSSLError | aiohttp.ClientSSLError):
            return Unreachable(self.redact(f"TLS with {where} failed: {exc.os_error}"))
        if isinstance(exc, aiohttp.ClientConnectorDNSError):
            return Unreachable(f"cannot resolve the host of {where} (DNS)")
        if isinstance(exc, aiohttp.ClientProxyConnectionError):
            return Unreachable(self.redact(f"cannot connect to the proxy for {where}: {exc}"))
        if isinstance(exc, aiohttp.ClientConnectorError):
            reason = exc.os_error.strerror or str(exc.os_error) or type(exc.os_error).__name__
            return Unreachable(f"cannot connect to {where}: {reason}")
        if isinstance(exc, aiohttp.ServerDisconnectedError):
            return BrokenAnswer(f"{where} closed the connection without a complete answer")
        if isinstance(exc, aiohttp.ClientPayloadError):
            return BrokenAnswer(f"the answer from {where} was cut off")
        if isinstance(exc, aiohttp.ClientResponseError):
            reason = (exc.message.splitlines() or ["unreadable"])[0].rstrip(": ")
            return BrokenAnswer(self.redact(f"{where} sent a malformed answer: {reason}"))
        if isinstance(exc, aiohttp.InvalidURL):
            return Unreachable(f"{where} is not a URL redline can call")
        detail = str(exc) or "the connection was closed or reset"
        return BrokenAnswer(self.redact(f"{where}: {type(exc).__name__}: {detail}"))

    def _where(self, url: str) -> str:
        parts = urlsplit(redact_url(url))
        return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")) or url

    async def _route(
        self, url: str
    ) -> tuple[aiohttp.ClientSession, str | None, dict[str, str] | None]:
        """The session (direct, or a SOCKS proxy's), the http(s) proxy and its credentials."""
        await self._bind_loop()
        origin = "/".join(url.split("/", 3)[:3])  # scheme://host:port
        if origin in self._proxies:
            proxy = self._proxies[origin]
        else:
            proxy = self._proxies[origin] = proxy_for(url)
        if proxy is None:
            return self._session(None), None, None
        if proxy.scheme.startswith("socks"):
            return self._session(proxy), None, None
        auth = None
        if proxy.username is not None:
            auth = {"Proxy-Authorization": _basic(proxy.username, proxy.password)}
        return self._session(None), proxy.address, auth

    def _session(self, socks: Proxy | None) -> aiohttp.ClientSession:
        key = None if socks is None else socks.address
        session = self._sessions.get(key)
        if session is None:
            if socks is None:
                connector: aiohttp.BaseConnector = aiohttp.TCPConnector(limit=0)
            else:
                from aiohttp_socks import ProxyConnector, ProxyType

                host, port = socks.address.split("://", 1)[1].rsplit(":", 1)
                connector = ProxyConnector(
                    host=host.strip("[]"),
                    port=int(port),
                    proxy_type=ProxyType.SOCKS4
                    if socks.scheme.startswith("socks4")
                    else ProxyType.SOCKS5,
                    username=socks.username,
                    password=socks.password,
                    rdns=socks.scheme in ("socks5h", "socks4a"),
                    limit=0,
                )
            session = aiohttp.ClientSession(
                connector=connector,
                timeout=self._timeout,
                auto_decompress=False,
                skip_auto_headers=("Accept-Encoding", "Content-Type"),
            )
            self._sessions[key] = session
        return session

    async def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        self._sessions = {}  # a finished loop's sessions were closed by its shutdown
        self._loop = loop
        self._closer = _close_at_loop_shutdown(self._sessions)
        await anext(self._closer)

    async def aclose(self) -> None:
        closer, self._closer = self._closer, None
        if closer is not None and self._loop is asyncio.get_running_loop():
            await closer.aclose()  # its `finally` closes the sessions
        self._sessions = {}


def _socks_refusals() -> tuple[type[Exception], ...]:
    """What aiohttp-socks raises when a SOCKS proxy refuses or cannot be reached."""
    from aiohttp_socks import ProxyConnectionError, ProxyError, ProxyTimeoutError

    return (ProxyError, ProxyConnectionError, ProxyTimeoutError)


def _basic(user: str, password: str | None) -> str:
    """HTTP Basic credentials (RFC 7617) as a header value."""
    return "Basic " + base64.b64encode(f"{user}:{password or ''}".encode()).decode()


def _credentials_to_header(url: str, headers: dict[str, str]) -> str:
    """`url` without userinfo; its credentials become Basic authentication unless the
    caller authenticates otherwise (an API key wins over a base_url's user:password)."""
    if "@" not in url:
        return url
    target = URL(url)
    if target.user is None:
        return url
    if not any(name.lower() == "authorization" for name in headers):
        headers["Authorization"] = _basic(target.user, target.password)
    return str(target.with_user(None))


async def _close_at_loop_shutdown(
    sessions: dict[str | None, aiohttp.ClientSession],
) -> AsyncGenerator[None, None]:
    """Suspended until its loop shuts down its async generators; then closes `sessions`."""
    try:
        yield
    finally:
        for session in sessions.values():
            await session.close()
        sessions.clear()


class BlockingHttpClient:
    """An HttpClient for callers that are not async (the CI pull, embeddings): its own loop
    on a thread of its own, so it works inside and outside a running event loop."""

    def __init__(self, client: HttpClient) -> None:
        self.client = client
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def request(self, method: str, url: str, **options: Any) -> HttpAnswer:
        return self._run(self.client.request(method, url, **options))

    def _run(self, work: Awaitable[_T]) -> _T:
        async def wrapped() -> _T:
            return await work

        done: Future[_T] = asyncio.run_coroutine_threadsafe(wrapped(), self._loop)
        return done.result()

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._run(self.client.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


async def form_data(
    fields: Mapping[str, str], file_field: str, filename: str, content: bytes, content_type: str
) -> tuple[bytes, str]:
    """A multipart/form-data body (text fields, then one file) and its Content-Type header,
    written by aiohttp's multipart writer (an upload such as OpenAI's `POST /files`)."""
    writer = aiohttp.MultipartWriter("form-data")
    for name, value in fields.items():
        writer.append(value).set_content_disposition("form-data", name=name)
    part = writer.append(content, {"Content-Type": content_type})
    part.set_content_disposition("form-data", name=file_field, filename=filename)
    return await writer.as_bytes(), writer.content_type


@functools.cache
def trust(ca_bundle: Path | None = None) -> ssl.SSLContext:
    """The TLS context: the OS trust store and the bundled CAs, with SSL_CERT_FILE,
    SSL_CERT_DIR and `ca_bundle` added (a company CA joins the defaults, never replaces them).
    """
    import certifi
    import truststore

    context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    context.load_verify_locations(cafile=certifi.where())
    cafile = os.environ.get("SSL_CERT_FILE")
    if cafile and Path(cafile).is_file():
        context.load_verify_locations(cafile=cafile)
    capath = os.environ.get("SSL_CERT_DIR")
    if capath and Path(capath).is_dir():
        context.load_verify_locations(capath=capath)
    if ca_bundle is not None:
        context.load_verify_locations(cafile=str(ca_bundle))
    return context


def _size(limit: int) -> str:
    if limit >= MIB and limit % MIB == 0:
        return f"{limit // MIB} MB"
    return f"{limit} bytes"


__all__ = [
    "AnswerTooLarge",
    "BlockingHttpClient",
    "BrokenAnswer",
    "ExchangeTimeout",
    "HttpAnswer",
    "HttpClient",
    "HttpFailure",
    "HttpPolicy",
    "Unreachable",
    "form_data",
    "trust",
]
