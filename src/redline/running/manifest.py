"""Hash manifest of a suite's inputs (docs/rules.md: Hash manifest).

A run records the SHA-256 of every input it read, so that a case whose file
changed between two runs is shown as "case changed", never as a regression.
Keys are paths relative to the folder holding the suite (e.g.
`invoice-extract/fixtures/SUP-2411.txt`); `@`-keys hold what is not a file.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path

from redline.casemodel import SUITE_FILE
from redline.documents.yamlsource import plain_data
from redline.suite.cases import Case, Suite, case_content
from redline.text.words import COUNTING_RULE
from redline.version import __version__

MODEL_KEY = "@model"
VERSION_KEY = "@redline"
#: How words are counted (max-words, distinct-n): a change of the rule shows as a changed
#: input of the run, so shifted word scores are never read as a model regression.
WORD_COUNTING_KEY = "@word-counting"


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _key(path: Path, base: Path, folders: dict[str, str]) -> str:
    real = _real(path, folders)
    root = _real_folder(os.fspath(base), folders)
    if real.startswith(root) and real[len(root) : len(root) + 1] == os.sep:
        relative = real[len(root) + 1 :]  # what relpath answers for a path under `base`
    else:
        relative = os.path.relpath(real, root)
    return relative if os.sep == "/" else Path(relative).as_posix()


def _real(path: Path, folders: dict[str, str]) -> str:
    """`path.resolve()`, resolving each folder once for all the files in it (`folders`)."""
    if os.path.islink(path):
        return str(path.resolve())
    folder, name = os.path.split(os.fspath(path))
    return os.path.join(_real_folder(folder or ".", folders), name)


def _real_folder(folder: str, folders: dict[str, str]) -> str:
    real = folders.get(folder)
    if real is None:
        real = folders[folder] = str(Path(folder).resolve())
    return real


def prompt_key(suite: Suite, part: str) -> str:
    """Manifest key of a suite's prompt text (`system` or `user`)."""
    return f"{suite.path.name}/@prompt.{part}"


def input_in_words(key: str) -> str:
    """A manifest key as a person reads it: `replies/@prompt.system` is the system prompt
    of suite replies, `@model` the pinned model id; a file stays its path."""
    folder, _, name = key.rpartition("/")
    if name.startswith("@prompt."):
        return f"the {name.removeprefix('@prompt.')} prompt of suite {folder}"
    words = {
        MODEL_KEY: "the pinned model id",
        VERSION_KEY: "redline's version",
        WORD_COUNTING_KEY: "the word-counting rule",
    }
    return words.get(key, key)


def suite_manifest(suite: Suite, model_id: str) -> dict[str, str]:
    """Relative path → sha256 hex for every input of `suite`, plus prompt text, model, version.

    `@model`, `@redline` and `@word-counting` hold the pinned model id, redline's
    version and the word-counting rule as written (a hash would only hide what changed).
    """
    base = suite.path.parent
    files = [suite.path / SUITE_FILE, *suite.prompt_files]
    for case in suite.cases:
        files.append(case.path)
        files.extend(case.files)
    folders: dict[str, str] = {}
    manifest = {_key(p, base, folders): _file_hash(p) for p in files}
    manifest[prompt_key(suite, "system")] = _text_hash(suite.system_template)
    manifest[prompt_key(suite, "user")] = _text_hash(suite.user_template)
    conversation = conversation_digest(suite)
    if conversation is not None:
        manifest[prompt_key(suite, CONVERSATION_PART)] = conversation
    if suite.target is not None:
        manifest[f"{suite.path.name}/{TARGET_KEY}"] = suite.target.label
        manifest[code_key(suite)] = code_digest(suite.target.root, suite.target.code_files())
    manifest[MODEL_KEY] = model_id
    manifest[VERSION_KEY] = __version__
    manifest[WORD_COUNTING_KEY] = COUNTING_RULE
    return dict(sorted(manifest.items()))


#: Manifest keys of a target: what it is, and its code besides its prompt files (one input).
TARGET_KEY = "@target"
CODE_KEY = "@code"


def code_key(suite: Suite) -> str:
    """Manifest key of the hash of a target's code (shown as "code changed" when it moves)."""
    return f"{suite.path.name}/{CODE_KEY}"


def code_digest(root: Path, files: tuple[Path, ...]) -> str:
    """SHA-256 over the target's code files, each by its path under `root` and its bytes."""
    digest = hashlib.sha256()
    for path in sorted(files):
        name = Path(os.path.relpath(path, root)).as_posix().encode("utf-8")
        content = path.read_bytes()
        digest.update(len(name).to_bytes(8, "big") + name)
        digest.update(len(content).to_bytes(8, "big") + content)
    return digest.hexdigest()


def case_hash(case: Case, folders: dict[str, str] | None = None) -> str:
    """SHA-256 over the case file and every fixture and schema it reads.

    Not the prompt or the model: a changed case is "case changed", a changed
    prompt is what a regression is measured against. `folders` keeps the resolved
    folders between the cases of one run, which mostly share them.
    """
    digest = hashlib.sha256()
    base = case.path.parent
    folders = {} if folders is None else folders
    for path in (case.path, *sorted(case.files)):
        name = _key(path, base, folders).encode("utf-8")
        content = path.read_bytes()
        digest.update(len(name).to_bytes(8, "big") + name)
        digest.update(len(content).to_bytes(8, "big") + content)
    return digest.hexdigest()


#: The manifest part holding what a suite sends besides its prompt text.
CONVERSATION_PART = "conversation"


def conversation_digest(suite: Suite) -> str | None:
    """SHA-256 of the suite's shared messages, tools, tool choice and response format (image
    bytes by their own hash); None when it sets none of them (older manifests match)."""
    parts = (suite.messages, suite.tools, suite.tool_choice, suite.response_format)
    if not any(parts):
        return None
    data = [
        [dataclasses.asdict(m) for m in suite.messages],
        [dataclasses.asdict(t) for t in suite.tools],
        None if suite.tool_choice is None else dataclasses.asdict(suite.tool_choice),
        None if suite.response_format is None else dataclasses.asdict(suite.response_format),
    ]
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=_bytes_digest)
    return _text_hash(text)


def _bytes_digest(value: object) -> str:
    if isinstance(value, bytes):
        return hashlib.sha256(value).hexdigest()
    raise TypeError(f"{type(value).__name__} is not part of a conversation")


def sample_configuration(
    suite: Suite, case: Case, model_id: str, shared: dict[int, SuiteParts] | None = None
) -> str:
    """SHA-256 of everything that shapes one sample of `case` and its verdict.

    The model id, the prompt text and prompt files, the settings a sample is generated
    with (max_tokens, temperature, seed), the word-counting rule, and the case as it is
    asked and checked (vars, assertions, fixtures) — not its bar, tier or provenance.
    Two runs with the same value drew samples of the same configuration: their samples
    are evidence of one pass rate (the cause analysis counts them together).
    `shared` keeps what the cases of one suite have in common (its prompt files, its
    conversation, its target's code) between the calls of one run, read once.
    """
    parts = _suite_parts(suite, model_id, shared)
    digest = parts.head.copy()
    content = case.content if case.content is not None else _file_content(case.path.read_bytes())
    _add(digest, content.encode("utf-8"))
    for data in parts.tail:
        _add(digest, data)
    base = case.path.parent
    for path in sorted(case.files, key=lambda p: os.path.relpath(p, base)):
        _add(digest, os.path.relpath(path, base).encode("utf-8"))
        _add(digest, path.read_bytes())
    return digest.hexdigest()


@dataclasses.dataclass(frozen=True)
class SuiteParts:
    """What `sample_configuration` hashes of a suite: the parts before the case's content
    (as a digest to copy) and the parts after it."""

    suite: Suite
    model_id: str
    head: hashlib._Hash
    tail: tuple[bytes, ...]


def _suite_parts(suite: Suite, model_id: str, shared: dict[int, SuiteParts] | None) -> SuiteParts:
    known = None if shared is None else shared.get(id(suite))
    if known is not None and known.suite is suite and known.model_id == model_id:
        return known
    head = hashlib.sha256()
    for part in (
        model_id,
        suite.system_template,
        suite.user_template,
        repr((suite.max_tokens, suite.temperature, suite.seed)),
        COUNTING_RULE,
    ):
        _add(head, part.encode("utf-8"))
    tail: list[bytes] = []
    conversation = conversation_digest(suite)
    if conversation is not None:  # a suite without one hashes as it did before
        tail.append(conversation.encode("utf-8"))
    tail.extend(path.read_bytes() for path in suite.prompt_files)
    if suite.target is not None:  # the app's code shapes its answers as its prompt does
        tail.append(suite.target.label.encode("utf-8"))
        tail.append(code_digest(suite.target.root, suite.target.code_files()).encode("ascii"))
    parts = SuiteParts(suite, model_id, head, tuple(tail))
    if shared is not None:
        shared[id(suite)] = parts
    return parts


def _add(digest: hashlib._Hash, data: bytes) -> None:
    digest.update(len(data).to_bytes(8, "big") + data)


@functools.lru_cache(maxsize=4096)
def _file_content(data: bytes) -> str:
    """`case_content` of a case file's bytes (their hex when they are not YAML)."""
    try:
        spec = plain_data(data)
    except ValueError:
        return data.hex()
    return case_content(spec)


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
