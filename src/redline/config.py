"""Configuration: `[tool.redline]` in pyproject.toml or redline.toml (which wins).

The config file is the one place pinned model ids live (docs/rules.md: Pin the model in
one file); suites name models only by alias.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline.casemodel.values import is_number, show
from redline.documents.reading import NodeReader
from redline.documents.tomlsource import load_toml, toml_node, toml_text
from redline.documents.yamlsource import Mark, Node, did_you_mean
from redline.errors import ConfigError, Problem
from redline.provider_options import PROVIDER_KINDS, OptionKind, ProviderKind
from redline.text.lines import breaks_line

PROVIDER_TYPES = tuple(PROVIDER_KINDS)
CONFIG_FILES = ("redline.toml", "pyproject.toml")
DEFAULT_SUITES = ("cases",)

_ENV_REFERENCE = re.compile(r"^\s*(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|env:.*|%[A-Za-z_]+%)\s*$")
_ENV_INSIDE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")
#: Samples in flight at once when neither the config nor `--concurrency` says.
DEFAULT_CONCURRENCY = 4


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
    """How to reach one provider. `api_key_env` is the NAME of the variable, never the key.

    `options` holds every option its kind declares (`redline.provider_options`): the
    checked value written in the config file, else the declared default.
    """

    name: str
    type: str
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        kind = PROVIDER_KINDS.get(self.type)
        if kind is not None:
            object.__setattr__(self, "options", {**kind.defaults(), **self.options})

    @property
    def base_url(self) -> str | None:
        return self._text("base_url")

    @property
    def api_key_env(self) -> str | None:
        return self._text("api_key_env")

    @property
    def timeout_s(self) -> float:
        return float(self.options["timeout_s"])

    @property
    def max_retries(self) -> int:
        return int(self.options["max_retries"])

    @property
    def backoff_base_s(self) -> float:
        return float(self.options["backoff_base_s"])

    @property
    def backoff_max_s(self) -> float:
        return float(self.options["backoff_max_s"])

    @property
    def max_response_bytes(self) -> int:
        return int(self.options["max_response_bytes"])

    @property
    def ca_bundle(self) -> Path | None:
        """The CA file as written (relative to the config file's folder), None when unset."""
        value = self._text("ca_bundle")
        return Path(value) if value else None

    @property
    def threads(self) -> int:
        return int(self.options["threads"])

    def _text(self, key: str) -> str | None:
        value = self.options.get(key)
        return value if isinstance(value, str) else None


#: What a batch API takes off every token's price unless a price says otherwise.
DEFAULT_BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Price:
    """What a pinned model costs: US dollars per million input and per million output tokens,
    and per million input tokens read from and written to the provider's prompt cache
    (None: those are priced as fresh input)."""

    input_per_mtok: float
    output_per_mtok: float
    cached_input_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    #: The share of the price a provider's batch API takes off (`batch_discount`: OpenAI's
    #: Batch API and Anthropic's Message Batches both bill half).
    batch_discount: float = DEFAULT_BATCH_DISCOUNT

    def batched(self) -> Price:
        """The price of the same tokens sent through the provider's batch API."""
        share = 1.0 - self.batch_discount
        return Price(
            self.input_per_mtok * share,
            self.output_per_mtok * share,
            None if self.cached_input_per_mtok is None else self.cached_input_per_mtok * share,
            None if self.cache_write_per_mtok is None else self.cache_write_per_mtok * share,
            batch_discount=0.0,
        )

    def cost(
        self,
        input_tokens: int | None,
        output_tokens: int | None,
        cached_input_tokens: int | None = None,
        cache_write_tokens: int | None = None,
    ) -> float | None:
        if input_tokens is None or output_tokens is None:
            return None
        return self.cost_of(
            input_tokens, output_tokens, cached_input_tokens or 0, cache_write_tokens or 0
        )

    def cost_of(
        self,
        input_tokens: float,
        output_tokens: float,
        cached_input_tokens: float = 0,
        cache_write_tokens: float = 0,
    ) -> float:
        """US dollars for these token counts (fractional: a per-sample mean); the cached and
        cache-written tokens are part of `input_tokens`."""
        cached = (
            self.input_per_mtok
            if self.cached_input_per_mtok is None
            else (self.cached_input_per_mtok)
        )
        written = (
            self.input_per_mtok
            if self.cache_write_per_mtok is None
            else (self.cache_write_per_mtok)
        )
        fresh = max(input_tokens - cached_input_tokens - cache_write_tokens, 0)
        return (
            fresh * self.input_per_mtok
            + cached_input_tokens * cached
            + cache_write_tokens * written
            + output_tokens * self.output_per_mtok
        ) / 1e6


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
    #: Stop generating a sample once a failure no further text could undo settles its
    #: verdict (providers that stream: the local model); False keeps whole failing outputs.
    stop_when_settled: bool = True
    raw: Mapping[str, Any] = field(default_factory=dict)
    #: `raw` with where each value was written, for the sections read elsewhere (semantic).
    node: Node | None = field(default=None, compare=False, repr=False)

    def table(self, *parts: str) -> str:
        """The name under which the user finds a table of this config file."""
        return table_name(self.source.name, *parts)

    def mark_of(self, *path: str) -> Mark:
        """Where a setting is written in the config file (its nearest written table when
        it is not), for a problem found after loading, such as a missing file."""
        if self.node is None:
            return Mark(self.source.name, 0, 0)
        return self.node.mark_at(path)

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
        if name in PROVIDER_KINDS:
            return ProviderConfig(name=name, type=name)
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
        built_in = [ProviderConfig(name, name) for name in PROVIDER_KINDS]
        names = {p.api_key_env for p in (*built_in, *self.providers.values()) if p.api_key_env}
        semantic = self.raw.get("semantic")
        if isinstance(semantic, Mapping) and isinstance(semantic.get("api_key_env"), str):
            names.add(semantic["api_key_env"])
        return sorted(n for n in names if n)


def find_config_file(start: Path | None = None) -> tuple[Path, Node] | None:
    """The nearest config at or above `start`: redline.toml wins over pyproject.toml."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name in CONFIG_FILES:
            path = folder / name
            if not path.is_file():
                continue
            table = _redline_table(path)
            if table is not None:
                return path, table
    return None


def load_config(start: Path | None = None) -> Config:
    """Load and validate the configuration; raise ConfigError naming every problem."""
    found = find_config_file(start)
    if found is None:
        root = (start or Path.cwd()).resolve()
        return _build(root, root / "pyproject.toml", toml_node({}, "pyproject.toml", {}))
    path, table = found
    return _build(path.parent, path, table)


def parse_config(path: Path) -> Config:
    """Parse one given config file (redline.toml or pyproject.toml)."""
    table = _redline_table(path)
    if table is None:
        table = toml_node({}, path.name, {})
    return _build(path.parent.resolve(), path.resolve(), table)


def _redline_table(path: Path) -> Node | None:
    """The redline table of a config file on disk (see `redline_table`)."""
    root, problems = load_toml(path, path.name)
    if root is None:
        raise ConfigError("\n".join(str(p) for p in problems))
    return _table_in(root, path.name)


def redline_table(text: str, name: str) -> Node | None:
    """The redline table of a config file's text, as `load_config` finds it: `[tool.redline]`,
    or all of a redline.toml; None for a pyproject.toml without one. ConfigError when the
    text is not TOML."""
    root, problems = toml_text(text, name)
    if root is None:
        raise ConfigError("\n".join(str(p) for p in problems))
    return _table_in(root, name)


def _table_in(root: Node, name: str) -> Node | None:
    tool = root.get("tool")
    table = tool.get("redline") if tool is not None else None
    if table is not None and table.is_map:
        return table
    return root if name != "pyproject.toml" else None


def pinned_models(path: Path | None = None, text: str | None = None) -> dict[str, str]:
    """alias → pinned id from a config file (or its text): what the guard compares.
    ValueError when the text is not TOML."""
    if text is None:
        if path is None:
            raise ValueError("path or text required")
        text = path.read_text(encoding="utf-8")
    try:
        return pinned_in(redline_table(text, "redline.toml"))
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def pinned_in(table: Node | None) -> dict[str, str]:
    """alias → pinned id as a redline table writes them, unchecked."""
    models = table.get("models") if table is not None else None
    return {str(k): str(v.value) for k, v in models.items()} if models is not None else {}


def suite_folders(table: Node | None) -> list[str]:
    """Where suites live, relative to the config file: `suites` (one path or a list)."""
    node = table.get("suites") if table is not None else None
    if node is None:
        return list(DEFAULT_SUITES)
    return [str(item.value) for item in (node.children() if node.is_seq else [node])]


def moves_under_you(model_id: str) -> bool:
    """An alias like `latest` that a provider repoints: never a pinned model."""
    return re.search(r"latest$", model_id.strip(), re.IGNORECASE) is not None


def check_pinned(alias: str, value: object) -> str:
    """What is wrong with one `alias = "provider:name"` entry (a pinned model id), or ""."""
    if not isinstance(value, str) or not value.strip():
        return f"{alias}: must be a string 'provider:model-id'"
    if _ENV_REFERENCE.match(value) or _ENV_INSIDE.search(value):
        return (
            f"{alias} = {value!r}: a pinned model may not be read from an environment "
            "variable; write the exact model id in this file"
        )
    if ":" not in value:
        return f"{alias} = {value!r}: write it as 'provider:model-id', e.g. 'openai:{value}'"
    provider, name = value.split(":", 1)
    if not name:
        return f"{alias} = {value!r}: the model id after '{provider}:' is empty"
    if moves_under_you(name):
        return (
            f"{alias} = {value!r}: aliases like 'latest' move under you; "
            "pin a dated or versioned model id instead"
        )
    return ""


_TOP_KEYS = frozenset(
    {
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
        "stop_when_settled",
    }
)
_PRICE_KEYS = ("input_per_mtok", "output_per_mtok")
#: Prices of prompt-cache tokens; without them those tokens cost what fresh input does.
_CACHE_PRICE_KEYS = ("cached_input_per_mtok", "cache_write_per_mtok")
#: The share a batch API takes off this model's price (default DEFAULT_BATCH_DISCOUNT).
_BATCH_PRICE_KEY = "batch_discount"
_NEVER_A_KEY = "never write a key in a file"


def _build(root: Path, source: Path, table: Node) -> Config:
    problems: list[Problem] = []
    read = ConfigReader(source.name, problems)
    read.unknown_keys(table, _TOP_KEYS, read.table())
    providers = read.providers(table.get("providers"))
    models = read.models(table.get("models"), providers)
    prices = read.prices(table.get("prices"), models)
    max_run_cost = read.usd(table.get("max_run_cost"), "max_run_cost")
    confirm_cost_above = read.usd(table.get("confirm_cost_above"), "confirm_cost_above")
    concurrency = read.whole(
        table.get("concurrency"), "concurrency", DEFAULT_CONCURRENCY, minimum=1
    )
    score_drop = read.score_drop(table.get("score_drop"))
    stop_when_settled = read.boolean(table.get("stop_when_settled"), "stop_when_settled", True)
    suites = read.paths(table.get("suites"), "suites", list(DEFAULT_SUITES))
    store = read.text(table.get("store"), "store", ".redline/redline.db", ".redline/redline.db")
    if problems:
        raise ConfigError("\n".join(str(p) for p in sorted(problems)))
    assert concurrency is not None and score_drop is not None and store is not None
    assert stop_when_settled is not None
    return Config(
        root=root,
        source=source,
        models=models,
        providers=providers,
        prices=prices,
        store_path=root / store,
        concurrency=concurrency,
        suites=tuple(root / s for s in suites),
        score_drop=score_drop,
        max_run_cost=max_run_cost,
        confirm_cost_above=confirm_cost_above,
        stop_when_settled=stop_when_settled,
        raw=table.plain(),
        node=table,
    )


class ConfigReader(NodeReader):
    """A table of one config file, every problem at its line (other modules read their own
    sections, such as the semantic one, with it too)."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        super().__init__(problems, assign=" = ")
        self.source = source

    def table(self, *parts: str) -> str:
        return table_name(self.source, *parts)

    def no_pasted_key(self, table: Node, where: str) -> None:
        """An `api_key` in the file is refused: keys come from the environment only."""
        pasted = table.get("api_key")
        if pasted is not None:
            self.add(
                pasted.where,
                f"{where} api_key: {_NEVER_A_KEY}",
                "set api_key_env to the NAME of the environment variable that holds it",
            )

    def providers(self, node: Node | None) -> dict[str, ProviderConfig]:
        found: dict[str, ProviderConfig] = {}
        if self.mapping(node, "providers", "{openai = {base_url = ...}}") is None:
            return found
        assert node is not None
        for name, spec in node.items():
            if not spec.is_map:
                self.add(
                    spec.where,
                    f"{self.table('providers', name)} must be a table",
                    f"write it as {self.table('providers', name)} with base_url = ... below it",
                )
                continue
            found[name] = self.provider(name, spec)
        return found

    def provider(self, name: str, spec: Node) -> ProviderConfig:
        """One provider table: its `type` (the table's name by default) and every option
        checked against what that kind declares."""
        where = self.table("providers", name)
        self.no_pasted_key(spec, where)
        written = spec.get("type")
        ptype = self.choice(
            written, "type", PROVIDER_TYPES, name, f"in {where}: the provider's API"
        )
        kind = PROVIDER_KINDS.get(ptype or "")
        if kind is None:
            if written is None:
                self.add(
                    spec.where,
                    f"{where} needs a type: {name!r} is not a built-in provider",
                    f'write type = "openai" (any OpenAI-compatible server) or one of '
                    f"{', '.join(PROVIDER_TYPES)}",
                )
            return ProviderConfig(name=name, type=ptype or name)
        options = self.options(kind, spec, where)
        self.one_line_values(spec, where)
        if kind.own_url_when_renamed and name != kind.name and spec.get("base_url") is None:
            self.add(
                spec.where,
                f"{where} base_url is required for an {kind.label}-compatible provider other "
                f"than {kind.name!r}",
                'e.g. base_url = "http://localhost:8000/v1"',
            )
        return ProviderConfig(name=name, type=kind.name, options=options)

    def one_line_values(self, spec: Node, where: str) -> None:
        """A CR or LF in a provider's text setting is refused: sent in a header, it would
        start a header line (or a whole request) of its own."""
        for key, node in spec.items():
            if node.is_scalar and isinstance(node.value, str) and breaks_line(node.value):
                self.add(
                    node.mark,
                    f"{where} {key} contains a line break (CR or LF): it would reach the "
                    "server as a header line of its own",
                    f"write {key} on one line, without \\r or \\n",
                )

    def options(self, kind: ProviderKind, spec: Node, where: str) -> dict[str, Any]:
        """The options written in a provider table, each checked against its declaration."""
        found: dict[str, Any] = {}
        for key, node in spec.items():
            if key in ("type", "api_key"):
                continue
            option = kind.option(key)
            if option is None:
                self.add(
                    node.where,
                    f"{where} unknown option {key!r} for a provider of type {kind.name!r}"
                    f"{did_you_mean(key, kind.keys)}",
                    f"known: {', '.join(kind.keys)}",
                )
                continue
            value = node.value if node.is_scalar else node.plain()
            wrong = option.problem(value)
            if wrong:
                self.add(node.mark, f"{where} {wrong}", option.hint())
            else:
                found[key] = float(value) if option.kind is OptionKind.NUMBER else value
        return found

    def models(
        self, node: Node | None, providers: Mapping[str, ProviderConfig]
    ) -> dict[str, ModelRef]:
        found: dict[str, ModelRef] = {}
        if self.mapping(node, "models", '{default = "openai:gpt-4.1-2025-04-14"}') is None:
            return found
        assert node is not None
        where = self.table("models")
        for alias, value in node.items():
            wrong = check_pinned(alias, value.value if value.is_scalar else None)
            if wrong:
                self.add(value.where, f"{where} {wrong}", "pin an exact id: provider:model-id")
                continue
            provider, name = str(value.value).split(":", 1)
            if provider not in providers and provider not in PROVIDER_TYPES:
                self.add(
                    value.where,
                    f"{where} {alias}: unknown provider {provider!r}",
                    f"built in: {', '.join(PROVIDER_TYPES)}; "
                    f"or add {self.table('providers', provider)}",
                )
                continue
            found[alias] = ModelRef(alias=alias, provider=provider, name=name.strip())
        return found

    def prices(self, node: Node | None, models: Mapping[str, ModelRef]) -> dict[str, Price]:
        """The price table, keyed by pinned model id; a key may also be an alias of [models]."""
        found: dict[str, Price] = {}
        if self.mapping(node, "prices", "{default = {input_per_mtok = 2.0, ...}}") is None:
            return found
        assert node is not None
        for key, spec in node.items():
            entry = self.table("prices", _toml_key(key))
            if key not in models and ":" not in key:
                known = ", ".join(sorted(models)) or "none"
                self.add(
                    spec.where,
                    f"{entry}: {key!r} is neither a pinned alias (known: {known}) nor a model id",
                    "write the key as an alias of the models table or as 'provider:model-id'",
                )
                continue
            price = self.price(entry, spec)
            model_id = models[key].id if key in models else key
            if price is not None and model_id in found:
                self.add(
                    spec.where,
                    f"{entry}: {model_id} is priced twice (by alias and by id)",
                    "keep one of the two entries",
                )
            elif price is not None:
                found[model_id] = price
        return found

    def price(self, entry: str, spec: Node) -> Price | None:
        """One model's price: both amounts, US dollars per million tokens."""
        example = "input_per_mtok = 2.0 and output_per_mtok = 8.0 below it"
        if not spec.is_map:
            self.add(spec.where, f"{entry} must be a table with {', '.join(_PRICE_KEYS)}", example)
            return None
        known = (*_PRICE_KEYS, *_CACHE_PRICE_KEYS, _BATCH_PRICE_KEY)
        unknown = [key for key, _ in spec.items() if key not in known]
        if unknown:
            self.add(
                (spec.get(unknown[0]) or spec).where,
                f"{entry}: unknown key(s) {', '.join(unknown)}; a price has input_per_mtok and "
                "output_per_mtok, and may have cached_input_per_mtok and cache_write_per_mtok "
                "(US dollars per million tokens) and batch_discount (a fraction)",
                f"rename it{'s' if len(unknown) > 1 else ''} to one of these",
            )
        cache: list[float | None] = []
        for key in _CACHE_PRICE_KEYS:
            node = spec.get(key)
            if node is not None and not _is_amount(node.value):
                self.add(
                    node.where,
                    f"{entry}.{key} must be US dollars per million tokens, a number of at least 0",
                    f"{key} = 0.5, say, or leave it out to price those tokens as fresh input",
                )
            cache.append(float(node.value) if node is not None and _is_amount(node.value) else None)
        values = [spec.get(key) for key in _PRICE_KEYS]
        amounts = [v.value for v in values if v is not None and _is_amount(v.value)]
        if len(amounts) != len(_PRICE_KEYS):
            bad = [v for v in values if v is not None and not _is_amount(v.value)]
            self.add(
                (bad[0] if bad else spec).where,
                f"{entry} needs input_per_mtok and output_per_mtok: US dollars per million "
                "tokens, numbers of at least 0",
                example,
            )
            return None
        discount = DEFAULT_BATCH_DISCOUNT
        node = spec.get(_BATCH_PRICE_KEY)
        if node is not None:
            if is_number(node.value) and 0 <= node.value < 1:
                discount = float(node.value)
            else:
                self.add(
                    node.where,
                    f"{entry}.{_BATCH_PRICE_KEY} must be the share a batch API takes off the "
                    "price, a number from 0 up to (not including) 1",
                    f"{_BATCH_PRICE_KEY} = 0.5 (half price, as OpenAI and Anthropic bill "
                    "batches), or leave it out",
                )
        return Price(float(amounts[0]), float(amounts[1]), cache[0], cache[1], discount)

    def usd(self, node: Node | None, key: str) -> float | None:
        """An amount in US dollars above 0 (absent: no limit)."""
        if node is None:
            return None
        if not node.is_scalar or not _is_amount(node.value) or node.value == 0:
            self.add(
                node.mark,
                f"{key} must be a positive amount in US dollars, not {show(node.value)}",
                f"e.g. {key} = 5.0",
            )
            return None
        return float(node.value)

    def score_drop(self, node: Node | None) -> float | None:
        value = self.number(node, "score_drop", 0.10, minimum=0, maximum=1, example="0.1")
        if value is not None and value >= 1:
            assert node is not None
            self.add(node.mark, "`score_drop` must be a fraction below 1", "e.g. score_drop = 0.1")
            return None
        return value

    def paths(self, node: Node | None, key: str, default: list[str]) -> list[str]:
        """One path or a list of paths."""
        if node is None:
            return default
        items = node.children() if node.is_seq else [node]
        found = [self.text(item, key, example='["cases"]') for item in items]
        return [f for f in found if f is not None]


def _is_amount(value: object) -> bool:
    """US dollars: a number of at least 0."""
    return is_number(value) and value >= 0  # type: ignore[operator]


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else f'"{key}"'


#: The declarations the documentation's reference page is written from (redline.reference).
CONFIG_KEYS = _TOP_KEYS
PRICE_KEYS = _PRICE_KEYS
CACHE_PRICE_KEYS = _CACHE_PRICE_KEYS
BATCH_PRICE_KEY = _BATCH_PRICE_KEY
