"""The one interface the runner talks to, whatever answers the prompt."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, cast, runtime_checkable

from redline.errors import (
    AccountRefused,
    CredentialsRejected,
    EndpointUnreachable,
    ModelUnknown,
    RunStopped,
)
from redline.vocabulary.completion import ChatRequest, Completion, Refusal

if TYPE_CHECKING:
    from redline.providers.ratelimit import RateLimiter


@runtime_checkable
class Provider(Protocol):
    """Answers one sample's request.

    `complete` never raises for transport problems: after its retries it returns
    a `Completion` whose `error` is set (verdict `transport`). `max_parallel` caps
    concurrent calls for providers bound by a resource (the local model: its
    parallel slots); None means the runner's own limit applies.
    """

    max_parallel: int | None

    async def complete(self, request: ChatRequest) -> Completion: ...

    async def aclose(self) -> None: ...

    def identity(self) -> str:
        """The pinned model identity recorded with the run."""
        ...


#: What stops a run whose first requests meet each refusal of its provider.
REFUSAL_STOPS: dict[Refusal, type[RunStopped]] = {
    Refusal.CREDENTIALS: CredentialsRejected,
    Refusal.ACCOUNT: AccountRefused,
    Refusal.MODEL: ModelUnknown,
    Refusal.ENDPOINT: EndpointUnreachable,
}


def in_flight(provider: Provider, wanted: int) -> int:
    """Calls to keep in flight at once: `wanted`, capped by the provider's own limit."""
    limit = provider.max_parallel
    return max(1, wanted if limit is None else min(wanted, limit))


def ride_rate_limit(provider: Provider, start: int) -> RateLimiter | None:
    """The limiter of the provider's endpoint, starting at `start` in flight when nothing
    sent to it yet, when it has one (an HTTP API whose table leaves adaptation on)."""
    ride = getattr(provider, "ride_rate_limit", None)
    return None if ride is None else cast("RateLimiter | None", ride(start))
