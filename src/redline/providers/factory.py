"""Build the provider for a pinned model, checking everything it needs before any request.

Each kind of provider is imported when a model needs it: a run on a local model does not
load the HTTP client, and the first request of an HTTP run does not wait for llama.cpp.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from redline.config import Config, ModelRef, ProviderConfig
from redline.errors import ConfigError
from redline.providers.base import Provider

if TYPE_CHECKING:
    from redline.providers.http_provider import HttpProvider


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

    api_key = _api_key(settings, os.environ if env is None else env, model)
    base_url = settings.base_url
    assert base_url is not None, "the config reader fills in every HTTP provider's base_url"
    kind: type[HttpProvider]
    if settings.type == "anthropic":
        from redline.providers.anthropic import AnthropicProvider

        kind = AnthropicProvider
    else:
        from redline.providers.openai import OpenAIProvider

        kind = OpenAIProvider
    return kind(model, settings, base_url=base_url, api_key=api_key, price=price)


def _api_key(settings: ProviderConfig, env: Mapping[str, str], model: ModelRef) -> str | None:
    variable = settings.api_key_env
    if not variable:
        return None
    key = env.get(variable, "").strip()
    if not key:
        raise ConfigError(
            f"model {model.alias!r} ({model.id}) needs an API key: "
            f"set the environment variable {variable}"
        )
    return key
