"""Which proxy an outbound call goes through, read from the environment as curl reads it.

`HTTPS_PROXY` / `HTTP_PROXY` by the URL's scheme, else `ALL_PROXY`; `NO_PROXY` lists
hosts reached directly. http://, https:// and socks5:// (socks5h://, socks4://) proxies
are used; anything else is refused before any request, naming the variable and never
showing the credentials written in it.
"""

from __future__ import annotations

import functools
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from redline.errors import ProxyUnsupported
from redline.redaction import redact_url


@dataclass(frozen=True)
class Proxy:
    """A proxy from the environment, its credentials apart from its address."""

    scheme: str
    address: str  # scheme://host:port, no credentials
    username: str | None
    password: str | None
    variable: str


_PROXY_SCHEMES = ("http", "https", "socks5", "socks5h", "socks4", "socks4a")


def proxy_for(url: str, env: Mapping[str, str] | None = None) -> Proxy | None:
    """The proxy the environment names for `url` (its scheme's variable, else ALL_PROXY;
    NO_PROXY honoured); ProxyUnsupported for a proxy URL redline cannot use."""
    environ = os.environ if env is None else env
    parts = urlsplit(url)
    for name in (f"{parts.scheme}_proxy", "all_proxy"):
        variable, value = _variable(environ, name)
        if value:
            break
    else:
        return None
    if _bypassed(parts.hostname or "", environ):
        return None
    return _proxy(value, variable)


def proxy_problems(env: Mapping[str, str] | None = None) -> list[str]:
    """Every proxy variable in the environment redline cannot use, said without credentials."""
    environ = os.environ if env is None else env
    problems = []
    for name in ("https_proxy", "http_proxy", "all_proxy"):
        variable, value = _variable(environ, name)
        if value:
            try:
                _proxy(value, variable)
            except ProxyUnsupported as exc:
                problems.append(str(exc))
    return problems


def _variable(environ: Mapping[str, str], name: str) -> tuple[str, str]:
    for variable in (name, name.upper()):
        value = environ.get(variable, "").strip()
        if value:
            return variable, value
    return name.upper(), ""


@functools.cache
def _proxy(value: str, variable: str) -> Proxy:
    parts = urlsplit(value if "://" in value else f"http://{value}")
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    if scheme not in _PROXY_SCHEMES or not parts.hostname or port == -1:
        raise ProxyUnsupported(
            f"${variable} = {redact_url(value)!r} is not a proxy redline can use: write it as "
            "http://host:port, https://host:port or socks5://host:port (credentials as "
            "user:password@ before the host)"
        )
    default = {"http": 80, "https": 443}.get(scheme, 1080)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return Proxy(
        scheme=scheme,
        address=f"{scheme}://{host}:{port or default}",
        username=None if parts.username is None else unquote(parts.username),
        password=None if parts.password is None else unquote(parts.password),
        variable=variable,
    )


def _bypassed(host: str, environ: Mapping[str, str]) -> bool:
    """Whether NO_PROXY names `host`: `*`, the host, a parent domain, or a CIDR block."""
    no_proxy = environ.get("no_proxy") or environ.get("NO_PROXY") or ""
    host = host.lower().strip("[]")
    for raw in no_proxy.split(","):
        entry = raw.strip().lower().lstrip(".")
        if entry == "*":
            return True
        if entry.count(":") == 1:
            entry = entry.split(":", 1)[0]  # host:port
        entry = entry.strip("[]")
        if not entry:
            continue
        if host == entry or host.endswith("." + entry) or _in_block(host, entry):
            return True
    return False


def _in_block(host: str, entry: str) -> bool:
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False
