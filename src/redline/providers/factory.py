"""Build the provider for a pinned model, checking everything it needs before any request.

Each kind of provider is imported when a model needs it: a run on a local model does not
load the HTTP client, and the first request of an HTTP run does not wait for llama.cpp.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from redline.config import Config, ModelRef, ProviderConfig
from redline.errors import ConfigError, UsageError
from redline.provider_options import BATCH_KINDS
from redline.providers.base import Provider
from redline.proxies import proxy_problems
from redline.text.lines import breaks_line

if TYPE_CHECKING:
    from redline.providers.batching import BatchApi, BatchLedger, BatchProvider
    from redline.providers.http_provider import HttpProvider


def line_break_in(variable: str) -> str:
    """What is wrong with a key variable holding a CR or LF (never its value)."""
    return (
        f"the environment variable {variable} contains a line break (CR or LF): sent as a "
        f"header it would start a header line of its own; set {variable} to the key alone, "
        "on one line"
    )


def request_problems(config: Config, env: Mapping[str, str] | None = None) -> list[str]:
    """What stops every HTTP call of this config before the first one is sent: a key
    variable holding a line break, a proxy variable redline cannot use, a ca_bundle file
    that is not there."""
    environ = os.environ if env is None else env
    problems = [
        line_break_in(name)
        for name in config.key_variables()
        if breaks_line(environ.get(name, "").strip())
    ]
    for settings in config.providers.values():
        try:
            _ca_bundle(settings, config)
        except ConfigError as exc:
            problems.append(str(exc))
    return problems + proxy_problems(environ)


def _ca_bundle(settings: ProviderConfig, config: Config) -> Path | None:
    """The provider's CA file, from the config file's folder; ConfigError when missing."""
    written = settings.ca_bundle
    if written is None:
        return None
    path = config.root / written
    if not path.is_file():
        problem = config.mark_of("providers", settings.name, "ca_bundle").problem(
            f"{config.table('providers', settings.name)} ca_bundle: no file "
            f"{str(written)!r} (from {config.root})",
            "give the path of a PEM file of the CA certificates to trust",
        )
        raise ConfigError(str(problem))
    return path


def make_provider(
    model: ModelRef, config: Config, env: Mapping[str, str] | None = None
) -> Provider:
    """The provider for `model`; ConfigError when its key is not in the environment or its
    model file is missing (never echoing a key's value).

    The provider's options were checked when the config was loaded; what is left to
    check is what the config cannot say.
    `env` defaults to the process environment. A provider whose `api_key_env` is
    set to an empty string sends no key (local OpenAI-compatible servers).
    """
    settings = config.provider(model.provider)
    price = config.price(model.id)
    if settings.type == "local":
        from redline.providers.local import LocalProvider, locate_model

        path = locate_model(model.name, config.root)
        return LocalProvider(model, settings, path=path, price=price)

    environ = os.environ if env is None else env
    problems = proxy_problems(environ)
    if problems:
        raise ConfigError("\n".join(problems))
    api_key = _api_key(settings, environ, model)
    ca_bundle = _ca_bundle(settings, config)
    base_url = settings.base_url
    assert base_url is not None, "the config reader fills in every HTTP provider's base_url"
    kind: type[HttpProvider]
    if settings.type == "anthropic":
        from redline.providers.anthropic import AnthropicProvider

        kind = AnthropicProvider
    else:
        from redline.providers.openai import OpenAIProvider

        kind = OpenAIProvider
    return kind(
        model, settings, base_url=base_url, api_key=api_key, price=price, ca_bundle=ca_bundle
    )


def batch_wanted(
    model: ModelRef, config: Config, *, asked: bool | None, if_supported: bool, target: bool
) -> bool:
    """Whether a run on `model` goes through its provider's batch API: `--batch` (`asked`
    True), `--no-batch` (False), else `--batch-if-supported` or the provider's `batch`
    setting. UsageError when `--batch` asks it of a provider without one (the local model,
    a suite's own target), naming the providers that have one."""
    if asked is False:
        return False
    kinds = " and ".join(f"type = {kind!r}" for kind in BATCH_KINDS)
    fix = (
        f"Batch mode needs an OpenAI or Anthropic provider ({kinds} in its [providers] "
        "table: OpenAI's Batch API, Anthropic's Message Batches); run without --batch"
    )
    if target:
        if asked and not if_supported:
            raise UsageError(
                "--batch: the suite's own target (python, http or command) answers its "
                f"requests itself. {fix}"
            )
        return False
    settings = config.provider(model.provider)
    supported = settings.type in BATCH_KINDS
    if asked and not supported and not if_supported:
        raise UsageError(
            f"--batch: model {model.alias!r} ({model.id}) runs on provider {settings.name!r} "
            f"of type {settings.type!r}, which has no batch API. {fix}, or pick such a model "
            "with --model"
        )
    if asked or if_supported:
        return supported
    return supported and bool(settings.options.get("batch"))


def batch_provider(
    provider: Provider,
    *,
    run_id: str,
    ledger: BatchLedger,
    wait_s: float | None,
    reuse_failures: bool,
    fallback: bool,
    direct_limit: int,
    on_state: Callable[[str], None] | None,
) -> BatchProvider:
    """`provider`'s requests through its batch API (`batch_wanted` said it has one)."""
    from redline.providers.batching import BatchProvider
    from redline.providers.http_provider import HttpProvider

    api = batch_api(provider, run_id)
    assert isinstance(provider, HttpProvider), "only HTTP providers have a batch API"
    return BatchProvider(
        provider,
        api,
        run_id=run_id,
        ledger=ledger,
        poll_s=float(provider.config.options["batch_poll_s"]),
        wait_s=wait_s,
        reuse_failures=reuse_failures,
        fallback=fallback,
        direct_limit=direct_limit,
        on_state=on_state,
    )


def batch_api(provider: Provider, run_id: str) -> BatchApi:
    """The batch API of `provider` (OpenAI's Batch API, Anthropic's Message Batches) for the
    batches of run `run_id`; UsageError for a provider that has none."""
    from redline.providers.anthropic import AnthropicProvider
    from redline.providers.openai import OpenAIProvider

    if isinstance(provider, AnthropicProvider):
        from redline.providers.anthropic_batch import AnthropicBatchApi

        return AnthropicBatchApi(provider)
    if isinstance(provider, OpenAIProvider):
        from redline.providers.openai_batch import OpenAIBatchApi

        return OpenAIBatchApi(provider, run_id)
    raise UsageError(
        f"{provider!r} has no batch API: batch mode needs an OpenAI or Anthropic provider"
    )


def _api_key(settings: ProviderConfig, env: Mapping[str, str], model: ModelRef) -> str | None:
    variable = settings.api_key_env
    if not variable:
        return None
    key = env.get(variable, "").strip()
    if breaks_line(key):
        raise ConfigError(line_break_in(variable))
    if not key:
        raise ConfigError(
            f"model {model.alias!r} ({model.id}) needs an API key: "
            f"set the environment variable {variable}"
        )
    return key
