"""What each kind of provider reads from its config table: one declaration per option.

The config reader checks every written option against its declaration when the file is
loaded (so `redline validate` reports a bad one at its line, before any request), fills
in the declared defaults, and the providers read the checked values from
`ProviderConfig.options`; `redline validate --help` and `redline run --help` quote the
declarations.

To add an option, declare it below under the kinds that read it (`Option(key, kind,
default, meaning, bounds)`; `_http` holds the options of every HTTP provider) and read
`config.options[key]` where it is used. Nothing else changes: loading, `redline
validate`, the unknown-option check and its suggestions, the help and the generated
tests all follow the declaration.

`replay` (`redline run --replay`) is built from a stored run and has no config table, so
it declares nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from redline.casemodel.values import is_number, is_whole, kind_name, show
from redline.machine import usable_cores

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: Default ceiling of one HTTP answer's body: far above any model answer, far below a
#: memory risk (`max_response_bytes` of a provider table changes it).
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024

#: Samples the runner keeps in flight per parallel slot of the local model, so that a
#: freed slot always has a next sample waiting (see providers/local_slots).
IN_FLIGHT_PER_SLOT = 4


class OptionKind(StrEnum):
    """The TOML value an option takes."""

    URL = "url"  # an http(s) URL: text with a scheme and a host
    TEXT = "text"  # non-empty text
    KEY_VARIABLE = "key-variable"  # the NAME of an environment variable ("" = no key)
    NUMBER = "number"
    WHOLE = "whole"  # a whole number
    BOOLEAN = "boolean"
    TEXTS = "texts"  # non-empty text or a list of them (globs, a command's words)
    MAPPING = "mapping"  # a mapping (headers, environment variables)
    ANY = "any"  # any value (a JSON body template)


_WHAT = {
    OptionKind.URL: "text: an http(s) URL with its scheme",
    OptionKind.TEXT: "non-empty text",
    OptionKind.KEY_VARIABLE: "the NAME of an environment variable (letters, digits, _)",
    OptionKind.NUMBER: "a number",
    OptionKind.WHOLE: "a whole number",
    OptionKind.BOOLEAN: "true or false",
    OptionKind.TEXTS: "text or a list of texts",
    OptionKind.MAPPING: "a mapping",
    OptionKind.ANY: "any value",
}


@dataclass(frozen=True)
class Option:
    """One setting of a provider table: its kind, bounds, default and what it sets."""

    key: str
    kind: OptionKind
    #: The value when the table does not write it (None: unset).
    default: Any
    #: What the option sets, in a few words (messages, help, docs).
    meaning: str
    minimum: float | None = None
    maximum: float | None = None
    #: The minimum itself is out of range (a timeout of 0 s).
    above_minimum: bool = False
    #: What a hint suggests when the default is none to show.
    example: Any = None
    #: The default in words, when it depends on the machine ("one per core").
    default_words: str = ""

    @property
    def expected(self) -> str:
        """The kind and bounds in words: "a whole number of at least 1"."""
        what = _WHAT[self.kind]
        if self.kind is OptionKind.WHOLE and self.minimum == 1 and self.maximum is None:
            return "a positive integer (at least 1)"
        bounds = []
        if self.minimum is not None:
            word = "greater than" if self.above_minimum else "of at least"
            bounds.append(f"{word} {self.minimum:g}")
        if self.maximum is not None:
            bounds.append(f"{'at' if bounds else 'of at'} most {self.maximum:g}")
        return f"{what} {' and '.join(bounds)}" if bounds else what

    @property
    def suggestion(self) -> Any:
        return self.example if self.example is not None else self.default

    def problem(self, value: Any) -> str:
        """What is wrong with `value` for this option ("" when it is fine), starting with
        the key. A key variable's value is never echoed: it may be a pasted key."""
        if not self._right_kind(value):
            if self.kind is OptionKind.KEY_VARIABLE:
                return f"{self.key} must be {self.expected}, not a key"
            return f"{self.key} must be {self.expected}, not {_named(value)}"
        if self.kind is OptionKind.URL:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                return f"{self.key} must be an http(s) URL with its scheme, got {show(value)}"
        if self._out_of_range(value):
            return f"{self.key} must be {self.expected}, got {show(value)}"
        return ""

    def hint(self) -> str:
        return f"e.g. {self.key} = {toml_value(self.suggestion)} ({self.meaning})"

    def _right_kind(self, value: Any) -> bool:
        if self.kind in (OptionKind.URL, OptionKind.TEXT):
            return isinstance(value, str) and bool(value.strip())
        if self.kind is OptionKind.KEY_VARIABLE:
            return isinstance(value, str) and (value == "" or bool(_ENV_NAME.match(value)))
        if self.kind is OptionKind.NUMBER:
            return is_number(value)
        if self.kind is OptionKind.WHOLE:
            return is_whole(value)
        if self.kind is OptionKind.TEXTS:
            items = value if isinstance(value, list) else [value]
            return bool(items) and all(isinstance(i, str) and i.strip() for i in items)
        if self.kind is OptionKind.MAPPING:
            return isinstance(value, dict)
        if self.kind is OptionKind.ANY:
            return True
        return isinstance(value, bool)

    def _out_of_range(self, value: Any) -> bool:
        if not is_number(value):
            return False
        if self.maximum is not None and value > self.maximum:
            return True
        if self.minimum is None:
            return False
        return bool(value <= self.minimum if self.above_minimum else value < self.minimum)


@dataclass(frozen=True)
class ProviderKind:
    """A `type` of provider table and every option it reads."""

    name: str
    #: What the API is called in a sentence ("an OpenAI-compatible server").
    label: str
    options: tuple[Option, ...]
    #: A table of this kind under another name must write its own base_url: an
    #: OpenAI-compatible server is not OpenAI.
    own_url_when_renamed: bool = False

    def option(self, key: str) -> Option | None:
        return next((o for o in self.options if o.key == key), None)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(o.key for o in self.options)

    def defaults(self) -> dict[str, Any]:
        return {o.key: o.default for o in self.options}


def _http(base_url: str, key_variable: str, *own: Option) -> tuple[Option, ...]:
    """The options of a provider reached over HTTP."""
    return (
        Option("base_url", OptionKind.URL, base_url, "the API's address"),
        Option(
            "api_key_env",
            OptionKind.KEY_VARIABLE,
            key_variable,
            "the variable that holds the key, empty to send none",
        ),
        Option(
            "timeout_s",
            OptionKind.NUMBER,
            60.0,
            "seconds per request",
            minimum=0,
            above_minimum=True,
        ),
        Option(
            "max_retries",
            OptionKind.WHOLE,
            4,
            "retries after transport errors, 5xx, 429 and malformed answers",
            minimum=0,
        ),
        Option("backoff_base_s", OptionKind.NUMBER, 0.5, "first retry's wait ceiling", minimum=0),
        Option("backoff_max_s", OptionKind.NUMBER, 30.0, "longest wait between tries", minimum=0),
        Option(
            "max_response_bytes",
            OptionKind.WHOLE,
            DEFAULT_MAX_RESPONSE_BYTES,
            "the largest answer read, in bytes (a larger one is a transport failure)",
            minimum=1024,
        ),
        Option(
            "ca_bundle",
            OptionKind.TEXT,
            None,
            "a PEM file of CAs trusted besides the system's, from the config file's folder",
            example="certs/company-ca.pem",
        ),
        *own,
    )


#: The options of a provider with a batch API (OpenAI's Batch API, Anthropic's Message
#: Batches): `redline run --batch`, or `batch = true`, sends a run's requests through it.
_BATCH = (
    Option(
        "batch",
        OptionKind.BOOLEAN,
        False,
        "send runs through the provider's batch API at its batch price (--no-batch: not)",
    ),
    Option(
        "batch_poll_s",
        OptionKind.NUMBER,
        30.0,
        "seconds between two looks at a pending batch",
        minimum=0,
        above_minimum=True,
    ),
)

#: A rate limit is ridden up to this many samples in flight unless a table says otherwise.
DEFAULT_MAX_CONCURRENCY = 256

#: How a provider with a rate limit is ridden (see redline.providers.ratelimit).
_RATE_LIMIT = (
    Option(
        "adaptive_concurrency",
        OptionKind.BOOLEAN,
        True,
        "pace requests by the rate-limit headers and 429s, growing concurrency while "
        "they show room (false: a fixed concurrency)",
    ),
    Option(
        "max_concurrency",
        OptionKind.WHOLE,
        DEFAULT_MAX_CONCURRENCY,
        "the most samples in flight a rate limit's headroom may grow a run to",
        minimum=1,
    ),
)


def default_slots() -> int:
    """Samples the local model decodes at once when the config does not say: four per core
    (four slots batch a fifth more tokens per second than two on one copy; eight, no more)."""
    return 4 * usable_cores()


PROVIDER_KINDS: Mapping[str, ProviderKind] = {
    "openai": ProviderKind(
        "openai",
        "OpenAI",
        _http("https://api.openai.com/v1", "OPENAI_API_KEY", *_BATCH, *_RATE_LIMIT),
        own_url_when_renamed=True,
    ),
    "anthropic": ProviderKind(
        "anthropic",
        "Anthropic",
        _http(
            "https://api.anthropic.com",
            "ANTHROPIC_API_KEY",
            Option("anthropic_version", OptionKind.TEXT, "2023-06-01", "anthropic-version header"),
            *_BATCH,
            *_RATE_LIMIT,
        ),
    ),
    "local": ProviderKind(
        "local",
        "local",
        (
            Option(
                "threads",
                OptionKind.WHOLE,
                usable_cores(),
                "llama.cpp threads",
                minimum=1,
                default_words="one per core",
            ),
            Option(
                "parallel",
                OptionKind.WHOLE,
                default_slots(),
                "samples decoded at once, over all copies of the model",
                minimum=1,
                default_words="four per core",
            ),
            Option("n_ctx", OptionKind.WHOLE, 4096, "context tokens per sample", minimum=1),
            Option("verbose", OptionKind.BOOLEAN, False, "llama.cpp's own log on stderr"),
        ),
    ),
}


#: The provider kinds that have a batch API: those that declare `batch`.
BATCH_KINDS = tuple(name for name, kind in PROVIDER_KINDS.items() if kind.option("batch"))


#: A suite's `target:` (suite.yaml): the team's own code that answers instead of a model,
#: read by `redline.targets.spec` against these declarations (one of python, http and
#: command names it; paths are relative to the suite folder).
TARGET_OPTIONS: tuple[Option, ...] = (
    Option(
        "python", OptionKind.TEXT, None, "a function called with the case", example="app.bot:answer"
    ),
    Option(
        "http",
        OptionKind.MAPPING,
        None,
        "your app's endpoint (see the http options)",
        example="{url: http://127.0.0.1:8000/answer}",
    ),
    Option(
        "command",
        OptionKind.TEXTS,
        None,
        "an executable reading the case as JSON on stdin",
        example="[python, -m, app.cli]",
    ),
    Option(
        "root",
        OptionKind.TEXT,
        ".",
        "the app's folder (python's sys.path, the command's working folder)",
        example="../..",
    ),
    Option(
        "prompt_files",
        OptionKind.TEXTS,
        None,
        "globs of the app's prompt files, under root",
        example="[app/prompts/**/*.j2]",
    ),
    Option(
        "code",
        OptionKind.TEXTS,
        None,
        "globs of the rest of the app's code (one input)",
        example="[app/**/*.py]",
        default_words="the python target's package",
    ),
    Option(
        "model_env",
        OptionKind.KEY_VARIABLE,
        None,
        "the variable the app reads its model id from",
        example="APP_MODEL",
    ),
    Option(
        "timeout_s",
        OptionKind.NUMBER,
        60.0,
        "seconds one sample may take (then the target is stopped)",
        minimum=0,
        above_minimum=True,
    ),
    Option(
        "workers",
        OptionKind.WHOLE,
        None,
        "python worker processes",
        minimum=1,
        example=4,
        default_words="the run's concurrency",
    ),
    Option(
        "max_memory_mb",
        OptionKind.WHOLE,
        None,
        "memory one python worker or command may use",
        minimum=16,
        example=1024,
        default_words="no limit",
    ),
    Option(
        "env",
        OptionKind.MAPPING,
        None,
        "environment variables set for the target (values may read ${VAR})",
        example="{APP_URL: ${STAGING_URL}}",
    ),
)
#: `target.http`: the endpoint, where the answer is in its response, and the retries every
#: provider reached over HTTP makes.
HTTP_TARGET_OPTIONS: tuple[Option, ...] = (
    Option(
        "url", OptionKind.URL, None, "your app's endpoint", example="http://127.0.0.1:8000/answer"
    ),
    Option("method", OptionKind.TEXT, "POST", "POST or PUT"),
    Option(
        "headers",
        OptionKind.MAPPING,
        None,
        "request headers (${VAR} reads the environment, redacted)",
        example="{x-app-key: ${APP_KEY}}",
    ),
    Option(
        "body",
        OptionKind.ANY,
        None,
        "the JSON body; its strings are templates over the case",
        default_words="the case itself",
    ),
    Option(
        "answer", OptionKind.TEXT, "$", "path of the answer in the response", example="$.data.reply"
    ),
    Option("tool_calls", OptionKind.TEXT, None, "path of the tool calls", example="$.calls"),
    Option("usage", OptionKind.TEXT, None, "path of the token usage", example="$.usage"),
    Option("model", OptionKind.TEXT, None, "path of the model id the app used", example="$.model"),
    *(o for o in _http("", "") if o.key not in ("base_url", "api_key_env", "timeout_s")),
)
#: The keys of `HTTP_TARGET_OPTIONS` every provider reached over HTTP reads (retries,
#: limits, trust), handed to the HTTP client as its provider options.
HTTP_CLIENT_KEYS = tuple(
    o.key for o in _http("", "") if o.key not in ("base_url", "api_key_env", "timeout_s")
)


def _named(value: Any) -> str:
    """A value of the wrong kind as a message names it: "a number (5)", "a list"."""
    if isinstance(value, list | dict):
        return kind_name(value)
    kind = "a number" if is_number(value) else kind_name(value)
    return f"{kind} ({show(value)})"


def toml_value(value: Any) -> str:
    """A value as a TOML file writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return f"{value:g}" if isinstance(value, float) else str(value)
