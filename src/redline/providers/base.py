"""The one interface the runner talks to, whatever answers the prompt."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from redline.vocabulary.completion import ChatRequest, Completion


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
