"""Build the provider for a pinned model, checking everything it needs before any request.

Each kind of provider is imported when a model needs it: a run on a local model does not
load the HTTP client, and the first request of an HTTP run does not wait for llama.cpp.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from redline.casemodel.values import is_whole
from redline.config import Config, ModelRef, ProviderConfig
from redline.errors import ConfigError
from redline.providers.base import Provider
from redline.proxies import proxy_problems
from redline.redaction import redact_url
from redline.text.lines import breaks_line

if TYPE_CHECKING:
    from redline.providers.http_provider import HttpProvider

_HTTP_OPTIONS: Mapping[str, frozenset[str]] = {
    "openai": frozenset(),
    "anthropic": frozenset({"anthropic_version"}),
}


def line_break_in(variable: str) -> str:
    """What is wrong with a key variable holding a CR or LF (never its value)."""
    return (
        f"the environment variable {variable} contains a line break (CR or LF): sent as a "
        f"header it would start a header line of its own; set {variable} to the key alone, "
        "on one line"
    )


def environment_problems(config: Config, env: Mapping[str, str] | None = None) -> list[str]:
    """What in the environment stops any HTTP call of this config before the first one:
    a key variable holding a line break, a proxy variable redline cannot use."""
    environ = os.environ if env is None else env
    problems = [
        line_break_in(name)
        for name in config.key_variables()
        if breaks_line(environ.get(name, "").strip())
    ]
    return problems + proxy_problems(environ)


def _known_options(kind: str) -> frozenset[str]:
    if kind == "local":
        from redline.providers.local import LOCAL_OPTIONS

        return LOCAL_OPTIONS
    return _HTTP_OPTIONS.get(kind, frozenset())


def make_provider(
    model: ModelRef, config: Config, env: Mapping[str, str] | None = None
) -> Provider:
    """The provider for `model`; ConfigError naming every problem (never a key's value).

    `env` defaults to the process environment. A provider whose `api_key_env` is
    set to an empty string sends no key (local OpenAI-compatible servers).
    """
    settings = config.provider(model.provider)
    where = f"{config.source.name}: {config.table('providers', settings.name)}"
    known = _known_options(settings.type)
    problems = [
        f"{where}: unknown option {key!r} for a {settings.type} provider"
        f" (known: {', '.join(sorted(known)) or 'none'})"
        for key in settings.options
        if key not in known
    ]
    price = config.price(model.id)
    if settings.type == "local":
        for option, meaning in (("n_ctx", "context tokens"), ("parallel", "samples at once")):
            value = settings.options.get(option, 1)
            if not is_whole(value) or value < 1:
                problems.append(f"{where}: {option} must be a positive integer ({meaning})")
        if problems:
            raise ConfigError("\n".join(problems))
        from redline.providers.local import LocalProvider, locate_model

        path = locate_model(model.name, config.root)
        return LocalProvider(model, settings, path=path, price=price)

    environ = os.environ if env is None else env
    base_url = _base_url(settings, config, where, problems)
    api_key = _api_key(settings, environ, model, problems)
    problems += proxy_problems(environ)
    if problems:
        raise ConfigError("\n".join(problems))
    assert base_url is not None
    kind: type[HttpProvider]
    if settings.type == "openai":
        from redline.providers.openai import OpenAIProvider

        kind = OpenAIProvider
    elif settings.type == "anthropic":
        from redline.providers.anthropic import AnthropicProvider

        kind = AnthropicProvider
    else:
        raise ConfigError(f"{where}: provider type {settings.type!r} is not supported")
    return kind(model, settings, base_url=base_url, api_key=api_key, price=price)


def _base_url(
    settings: ProviderConfig, config: Config, where: str, problems: list[str]
) -> str | None:
    explicit = _explicit_base_url(settings.name, config)
    if settings.type == "openai" and settings.name != "openai" and not explicit:
        problems.append(
            f"{where}: base_url is required for an OpenAI-compatible provider other than "
            "'openai' (e.g. base_url = \"http://localhost:8000/v1\")"
        )
        return None
    url = settings.base_url
    if not url:
        problems.append(f"{where}: base_url is missing")
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        problems.append(f"{where}: base_url {redact_url(url)!r} is not an http(s) URL")
        return None
    return url


def _explicit_base_url(name: str, config: Config) -> str | None:
    providers = config.raw.get("providers")
    spec = providers.get(name) if isinstance(providers, Mapping) else None
    value = spec.get("base_url") if isinstance(spec, Mapping) else None
    return value if isinstance(value, str) and value else None


def _api_key(
    settings: ProviderConfig, env: Mapping[str, str], model: ModelRef, problems: list[str]
) -> str | None:
    variable = settings.api_key_env
    if not variable:
        return None
    key = env.get(variable, "").strip()
    if breaks_line(key):
        problems.append(line_break_in(variable))
        return None
    if not key:
        problems.append(
            f"model {model.alias!r} ({model.id}) needs an API key: "
            f"set the environment variable {variable}"
        )
        return None
    return key
