"""One streamed generation of the embedded model, stopped once its verdict is settled.

xllamacpp hands each chunk of a streamed chat completion to a callback, which may end
the generation by returning True. Most failing samples of a small model keep writing
long after their verdict stopped depending on what comes next (prose before the JSON,
a banned phrase already written, a token loop). So every few tokens the output so far
is shown to the request's `settled` check (see `assertions.evaluate.settled_failure`);
once it names a failure, generation stops and the sample keeps what was written, with
the failure that stopped it. A sample that could still pass is never stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from redline.providers.http_provider import Answer, optional_int
from redline.providers.openai import parse_chat_completion
from redline.vocabulary.completion import Completion

#: Generated tokens between two looks at the output so far, once past the first ones
#: (looked at after 1, 2, 4 and 8 tokens: prose before the JSON shows at once).
CHECK_EVERY = 8


class ChunkStream:
    """Collects one streamed completion (the callback xllamacpp calls per chunk).

    `partial` turns the output so far into the cut-off completion `settled` judges
    (the provider adds what it knows: model, latency so far, cost).
    """

    def __init__(
        self,
        settled: Callable[[Completion], str | None] | None,
        partial: Callable[[Answer], Completion],
    ) -> None:
        self.settled = settled
        self.partial = partial
        self.parts: list[str] = []
        self.finish: object = None
        self.usage: Mapping[str, Any] | None = None
        self.timings: Mapping[str, Any] | None = None
        self.model = ""
        #: Chunks that carried output text: the token count when the server gives none.
        self.pieces = 0
        self.error: str | None = None
        #: The failure that settled the verdict, when the stream was stopped for it.
        self.stopped: str | None = None
        self._looked_at = 0

    def __call__(self, chunk: Any) -> bool:
        """Take one chunk; True stops the generation."""
        try:
            return self._take(chunk)
        except Exception as exc:  # xllamacpp swallows a callback's exception: keep it
            self.error = f"reading the streamed answer failed: {type(exc).__name__}: {exc}"
            return True

    def _take(self, chunk: Any) -> bool:
        if not isinstance(chunk, Mapping):
            self.error = "a streamed chunk is not a JSON object"
            return True
        if "error" in chunk:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, Mapping) else None
            self.error = str(message or error)
            return True
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("timings"), Mapping):
            self.timings = chunk["timings"]
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return False
        choice = choices[0]
        if choice.get("finish_reason") is not None:
            self.finish = choice["finish_reason"]
        delta = choice.get("delta")
        content = delta.get("content") if isinstance(delta, Mapping) else None
        if not isinstance(content, str) or not content:
            return False
        self.parts.append(content)
        self.pieces += 1
        return self._settles()

    def _settles(self) -> bool:
        if self.settled is None or self.finish is not None:
            return False
        tokens = self.output_tokens or 0
        if tokens - self._looked_at < min(CHECK_EVERY, max(self._looked_at, 1)):
            return False
        self._looked_at = tokens
        failure = self.settled(self.partial(self.answer(cut=True)))
        if failure is None:
            return False
        self.stopped = failure
        return True

    @property
    def output_tokens(self) -> int | None:
        reported = optional_int(self.usage, "completion_tokens")
        if reported is None:
            reported = optional_int(self.timings, "predicted_n")
        return reported if reported is not None else self.pieces

    @property
    def input_tokens(self) -> int | None:
        reported = optional_int(self.usage, "prompt_tokens")
        if reported is None and self.timings is not None:
            read, cached = (optional_int(self.timings, k) for k in ("prompt_n", "cache_n"))
            if read is not None:
                reported = read + (cached or 0)
        return reported

    def answer(self, *, cut: bool = False) -> Answer:
        """What was generated; `cut`: as a cut-off output (also what a stopped stream is)."""
        finish = "length" if cut or self.stopped is not None else self.finish
        body = {
            "choices": [{"message": {"content": "".join(self.parts)}, "finish_reason": finish}],
            "model": self.model,
            "usage": {"prompt_tokens": self.input_tokens, "completion_tokens": self.output_tokens},
        }
        return parse_chat_completion(body)


__all__ = ["CHECK_EVERY", "ChunkStream"]
