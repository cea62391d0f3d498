"""The aiohttp transport under the HTTP providers: closed with its loop, errors in httpx terms."""

from __future__ import annotations

import asyncio
import gc
import logging
import warnings

import httpx
import pytest

from redline.config import Config
from redline.providers import make_provider
from redline.providers.completion import ChatRequest
from redline.providers.transport import AiohttpTransport
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
        transport = AiohttpTransport(connect_timeout_s=2)
        try:
            await transport.handle_async_request(httpx.Request("GET", "http://127.0.0.1:9/"))
        finally:
            await transport.aclose()

    with pytest.raises(httpx.ConnectError, match=r"cannot connect to 127\.0\.0\.1:9"):
        asyncio.run(go())
