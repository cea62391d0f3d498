"""Configuration: `[tool.redline]` in pyproject.toml or redline.toml (which wins).

The config file is the one place pinned model ids live (docs/rules.md: Pin the model in
one file); suites name models only by alias.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline.errors import ConfigError

PROVIDER_TYPES = ("openai", "anthropic", "local")
CONFIG_FILES = ("redline.toml", "pyproject.toml")

_ENV_REFERENCE = re.compile(r"^\s*(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|env:.*|%[A-Za-z_]+%)\s*$")
_ENV_INSIDE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def table_name(source: str, *parts: str) -> str:
    """How a user finds a config table in `source`: `[tool.redline.models]` in
    pyproject.toml, `[models]` in redline.toml (whose keys sit at top level)."""
    if source == "redline.toml":
        return f"[{'.'.join(parts)}]" if parts else "(top level)"
    return f"[{'.'.join(('tool', 'redline', *parts))}]"


@dataclass(frozen=True)
class ModelRef:
    """A pinned model: `alias` as suites write it, `id` as `provider:name`."""

    alias: str
    provider: str
    name: str

    @property
    def id(self) -> str:
        return f"{self.provider}:{self.name}"


@dataclass(frozen=True)
class ProviderConfig:
    """How to reach one provider. `api_key_env` is the NAME of the variable, never the key."""

    name: str
    type: str
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    threads: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Price:
    """What a pinned model costs: US dollars per million input and per million output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        if input_tokens is None or output_tokens is None:
            return None
        return self.cost_of(input_tokens, output_tokens)

    def cost_of(self, input_tokens: float, output_tokens: float) -> float:
        """US dollars for these token counts (fractional: a per-sample mean)."""
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


@dataclass(frozen=True)
class Config:
    root: Path
    source: Path
    models: Mapping[str, ModelRef]
    providers: Mapping[str, ProviderConfig]
    prices: Mapping[str, Price]
    store_path: Path
    concurrency: int
    suites: tuple[Path, ...]
    score_drop: float = 0.10
    #: Stop scheduling samples once a run has spent this many US dollars (None: no limit).
    max_run_cost: float | None = None
    #: Ask on a terminal before a run whose estimated cost exceeds this (None: never ask).
    confirm_cost_above: float | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    def table(self, *parts: str) -> str:
        """The name under which the user finds a table of this config file."""
        return table_name(self.source.name, *parts)

    def model(self, alias: str) -> ModelRef:
        try:
            return self.models[alias]
        except KeyError:
            known = ", ".join(sorted(self.models)) or "none"
            raise ConfigError(
                f"model alias {alias!r} is not pinned in {self.source.name} "
                f"(known aliases: {known}); add it under {self.table('models')}"
            ) from None

    def provider(self, name: str) -> ProviderConfig:
        if name in self.providers:
            return self.providers[name]
        if name in PROVIDER_TYPES:
            return ProviderConfig(name=name, type=name, **_PROVIDER_DEFAULTS.get(name, {}))
        raise ConfigError(f"provider {name!r} is not configured in {self.source.name}")

    def price(self, model_id: str) -> Price | None:
        """The price of a pinned model id as a run records it (the local model's
        `@sha256:` file suffix is ignored), None when the price table has no entry."""
        found = self.prices.get(model_id)
        if found is None and "@" in model_id:
            found = self.prices.get(model_id.split("@", 1)[0])
        return found

    def key_variables(self) -> list[str]:
        """Every environment variable this config reads an API key from."""
        names = {d["api_key_env"] for d in _PROVIDER_DEFAULTS.values() if d.get("api_key_env")}
        names |= {p.api_key_env for p in self.providers.values() if p.api_key_env}
        semantic = self.raw.get("semantic")
        if isinstance(semantic, Mapping) and isinstance(semantic.get("api_key_env"), str):
            names.add(semantic["api_key_env"])
        return sorted(n for n in names if n)


_PROVIDER_DEFAULTS: dict[str, dict[str, Any]] = {
    "openai": {"base_url": "https://api.openai.com/v1", "api_key_env": "OPENAI_API_KEY"},
    "anthropic": {"base_url": "https://api.anthropic.com", "api_key_env": "ANTHROPIC_API_KEY"},
    "local": {},
}


def find_config_file(start: Path | None = None) -> tuple[Path, Mapping[str, Any]] | None:
    """The nearest config at or above `start`: redline.toml wins over pyproject.toml."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name in CONFIG_FILES:
            path = folder / name
            if not path.is_file():
                continue
            data = _read_toml(path)
            if name == "redline.toml":
                table = data.get("tool", {}).get("redline", data)
                return path, table
            table = data.get("tool", {}).get("redline")
            if isinstance(table, dict):
                return path, table
    return None


def load_config(start: Path | None = None) -> Config:
    """Load and validate the configuration; raise ConfigError naming every problem."""
    found = find_config_file(start)
    if found is None:
        root = (start or Path.cwd()).resolve()
        return _build(root, root / "pyproject.toml", {})
    path, table = found
    return _build(path.parent, path, table)


def parse_config(path: Path) -> Config:
    """Parse one given config file (redline.toml or pyproject.toml)."""
    data = _read_toml(path)
    table = data.get("tool", {}).get("redline", data if path.name == "redline.toml" else {})
    return _build(path.parent.resolve(), path.resolve(), table)


def pinned_models(path: Path | None = None, text: str | None = None) -> dict[str, str]:
    """alias → pinned id from a config file (or its text): what the guard compares."""
    if text is None:
        if path is None:
            raise ValueError("path or text required")
        text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    table = data.get("tool", {}).get("redline", data)
    models = table.get("models", {}) if isinstance(table, dict) else {}
    return {str(k): str(v) for k, v in models.items()} if isinstance(models, dict) else {}


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def check_pinned(alias: str, value: object, source: str) -> list[str]:
    """Problems with one `alias = "provider:name"` entry (a pinned model id)."""
    where = f"{source}: {table_name(source, 'models')} {alias}"
    if not isinstance(value, str) or not value.strip():
        return [f"{where}: must be a string 'provider:model-id'"]
    if _ENV_REFERENCE.match(value) or _ENV_INSIDE.search(value):
        return [
            f"{where} = {value!r}: a pinned model may not be read from an environment "
            "variable; write the exact model id in this file"
        ]
    if ":" not in value:
        return [f"{where} = {value!r}: write it as 'provider:model-id', e.g. 'openai:{value}'"]
    provider, name = value.split(":", 1)
    if not name:
        return [f"{where} = {value!r}: the model id after '{provider}:' is empty"]
    if re.search(r"latest$", name.strip(), re.IGNORECASE):
        return [
            f"{where} = {value!r}: aliases like 'latest' move under you; "
            "pin a dated or versioned model id instead"
        ]
    return []


def _build(root: Path, source: Path, table: Mapping[str, Any]) -> Config:
    problems: list[str] = []
    src = source.name

    known_keys = {
        "models",
        "providers",
        "prices",
        "store",
        "concurrency",
        "suites",
        "score_drop",
        "semantic",
        "max_run_cost",
        "confirm_cost_above",
    }
    for key in table:
        if key not in known_keys:
            problems.append(f"{src}: unknown key {key!r} in {table_name(src)}")

    providers: dict[str, ProviderConfig] = {}
    raw_providers = table.get("providers", {})
    if not isinstance(raw_providers, dict):
        problems.append(f"{src}: {table_name(src, 'providers')} must be a table")
        raw_providers = {}
    for name, spec in raw_providers.items():
        if not isinstance(spec, dict):
            problems.append(f"{src}: {table_name(src, 'providers', name)} must be a table")
            continue
        providers[name], more = _provider(name, spec, src)
        problems.extend(more)

    models: dict[str, ModelRef] = {}
    raw_models = table.get("models", {})
    if not isinstance(raw_models, dict):
        problems.append(f"{src}: {table_name(src, 'models')} must be a table")
        raw_models = {}
    for alias, value in raw_models.items():
        more = check_pinned(alias, value, src)
        problems.extend(more)
        if more:
            continue
        provider, name = str(value).split(":", 1)
        if provider not in providers and provider not in PROVIDER_TYPES:
            problems.append(
                f"{src}: {table_name(src, 'models')} {alias}: unknown provider {provider!r} "
                f"(built in: {', '.join(PROVIDER_TYPES)}; "
                f"or add {table_name(src, 'providers', provider)})"
            )
            continue
        models[alias] = ModelRef(alias=alias, provider=provider, name=name.strip())

    prices, more = _prices(table.get("prices", {}), models, src)
    problems.extend(more)
    max_run_cost, more = _usd(table, "max_run_cost", src)
    problems.extend(more)
    confirm_cost_above, more = _usd(table, "confirm_cost_above", src)
    problems.extend(more)

    concurrency = table.get("concurrency", 4)
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        problems.append(f"{src}: concurrency must be a positive integer")
        concurrency = 4
    score_drop = table.get("score_drop", 0.10)
    if not isinstance(score_drop, int | float) or not 0 <= score_drop < 1:
        problems.append(f"{src}: score_drop must be a fraction in [0, 1)")
        score_drop = 0.10

    suites_raw = table.get("suites", ["cases"])
    if isinstance(suites_raw, str):
        suites_raw = [suites_raw]
    suites = tuple(root / str(s) for s in suites_raw)

    if problems:
        raise ConfigError("\n".join(problems))
    return Config(
        root=root,
        source=source,
        models=models,
        providers=providers,
        prices=prices,
        store_path=root / str(table.get("store", ".redline/redline.db")),
        concurrency=concurrency,
        suites=suites,
        score_drop=float(score_drop),
        max_run_cost=max_run_cost,
        confirm_cost_above=confirm_cost_above,
        raw=dict(table),
    )


def _prices(
    raw: object, models: Mapping[str, ModelRef], src: str
) -> tuple[dict[str, Price], list[str]]:
    """The price table, keyed by pinned model id; a key may also be an alias of [models]."""
    where = table_name(src, "prices")
    if not isinstance(raw, dict):
        return {}, [f"{src}: {where} must be a table of models"]
    prices: dict[str, Price] = {}
    problems: list[str] = []
    for key, spec in raw.items():
        entry = f"{src}: {table_name(src, 'prices', _toml_key(key))}"
        model_id = models[key].id if key in models else key
        if key not in models and ":" not in key:
            known = ", ".join(sorted(models)) or "none"
            problems.append(
                f"{entry}: {key!r} is neither a pinned alias (known: {known}) nor a model id "
                "written as 'provider:model-id'"
            )
            continue
        if not isinstance(spec, dict):
            problems.append(f"{entry} must be a table with input_per_mtok and output_per_mtok")
            continue
        unknown = sorted(set(spec) - {"input_per_mtok", "output_per_mtok"})
        if unknown:
            problems.append(
                f"{entry}: unknown key(s) {', '.join(unknown)}; a price has input_per_mtok and "
                "output_per_mtok (US dollars per million tokens)"
            )
        values = [spec.get(k) for k in ("input_per_mtok", "output_per_mtok")]
        if not all(_is_amount(v) for v in values):
            problems.append(
                f"{entry} needs input_per_mtok and output_per_mtok: US dollars per million "
                "tokens, numbers of at least 0"
            )
            continue
        if model_id in prices:
            problems.append(f"{entry}: {model_id} is priced twice (by alias and by id)")
        prices[model_id] = Price(float(values[0]), float(values[1]))  # type: ignore[arg-type]
    return prices, problems


def _usd(table: Mapping[str, Any], key: str, src: str) -> tuple[float | None, list[str]]:
    value = table.get(key)
    if value is None:
        return None, []
    if not _is_amount(value) or value == 0:
        return None, [f"{src}: {key} must be a positive amount in US dollars, e.g. {key} = 5.0"]
    return float(value), []


def _is_amount(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else f'"{key}"'


def _provider(name: str, spec: Mapping[str, Any], src: str) -> tuple[ProviderConfig, list[str]]:
    problems: list[str] = []
    where = f"{src}: {table_name(src, 'providers', name)}"
    ptype = str(spec.get("type", name))
    if ptype not in PROVIDER_TYPES:
        problems.append(f"{where} type {ptype!r} is not one of {', '.join(PROVIDER_TYPES)}")
    if "api_key" in spec:
        problems.append(
            f"{where} api_key: never write a key in a file; "
            "set api_key_env to the NAME of the environment variable that holds it"
        )
    key_env = spec.get("api_key_env")
    if key_env is not None and not (
        isinstance(key_env, str) and (key_env == "" or _ENV_NAME.match(key_env))
    ):
        # Never echo the value: a key pasted here must not reach a CI log as well.
        problems.append(
            f"{where} api_key_env must be the NAME of an environment variable "
            "(letters, digits, _), not a key: never write a key in a file"
        )
    defaults = dict(_PROVIDER_DEFAULTS.get(ptype, {}))
    known = {
        "type",
        "base_url",
        "api_key_env",
        "timeout_s",
        "max_retries",
        "backoff_base_s",
        "backoff_max_s",
        "threads",
        "api_key",
    }
    options = {k: v for k, v in spec.items() if k not in known}
    try:
        cfg = ProviderConfig(
            name=name,
            type=ptype,
            base_url=spec.get("base_url", defaults.get("base_url")),
            api_key_env=spec.get("api_key_env", defaults.get("api_key_env")),
            timeout_s=float(spec.get("timeout_s", 60.0)),
            max_retries=int(spec.get("max_retries", 4)),
            backoff_base_s=float(spec.get("backoff_base_s", 0.5)),
            backoff_max_s=float(spec.get("backoff_max_s", 30.0)),
            threads=int(spec["threads"]) if "threads" in spec else None,
            options=options,
        )
    except (TypeError, ValueError) as exc:
        problems.append(f"{where}: {exc}")
        cfg = ProviderConfig(name=name, type=ptype)
    return cfg, problems
