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
from redline.suite.cases import Case, Suite
from redline.text.words import COUNTING_RULE
from redline.version import __version__

MODEL_KEY = "@model"
VERSION_KEY = "@redline"
#: How words are counted (max-words, distinct-n): a change of the rule shows as a changed
#: input of the run, so shifted word scores are never read as a model regression.
WORD_COUNTING_KEY = "@word-counting"


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _key(path: Path, base: Path, folders: dict[Path, str]) -> str:
    return Path(os.path.relpath(_real(path, folders), _real_folder(base, folders))).as_posix()


def _real(path: Path, folders: dict[Path, str]) -> str:
    """`path.resolve()`, resolving each folder once for all the files in it (`folders`)."""
    if os.path.islink(path):
        return str(path.resolve())
    return os.path.join(_real_folder(path.parent, folders), path.name)


def _real_folder(folder: Path, folders: dict[Path, str]) -> str:
    real = folders.get(folder)
    if real is None:
        real = folders[folder] = str(folder.resolve())
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
    folders: dict[Path, str] = {}
    manifest = {_key(p, base, folders): _file_hash(p) for p in files}
    manifest[prompt_key(suite, "system")] = _text_hash(suite.system_template)
    manifest[prompt_key(suite, "user")] = _text_hash(suite.user_template)
    conversation = conversation_digest(suite)
    if conversation is not None:
        manifest[prompt_key(suite, CONVERSATION_PART)] = conversation
    manifest[MODEL_KEY] = model_id
    manifest[VERSION_KEY] = __version__
    manifest[WORD_COUNTING_KEY] = COUNTING_RULE
    return dict(sorted(manifest.items()))


def case_hash(case: Case, folders: dict[Path, str] | None = None) -> str:
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


#: Case-file keys that set the case's bar or describe it: not what a sample is asked or how
#: it is judged, so a sample drawn under a 3-of-4 bar is the same draw under 9-of-10.
_NOT_SAMPLE_KEYS = frozenset({"samples", "required", "tier", "provenance", "quarantine", "golden"})


def sample_configuration(suite: Suite, case: Case, model_id: str) -> str:
    """SHA-256 of everything that shapes one sample of `case` and its verdict.

    The model id, the prompt text and prompt files, the settings a sample is generated
    with (max_tokens, temperature, seed), the word-counting rule, and the case as it is
    asked and checked (vars, assertions, fixtures) — not its bar, tier or provenance.
    Two runs with the same value drew samples of the same configuration: their samples
    are evidence of one pass rate (the cause analysis counts them together).
    """
    digest = hashlib.sha256()
    parts: tuple[str, ...] = (
        model_id,
        suite.system_template,
        suite.user_template,
        repr((suite.max_tokens, suite.temperature, suite.seed)),
        COUNTING_RULE,
        _case_content(case.path.read_bytes()),
    )
    conversation = conversation_digest(suite)
    if conversation is not None:  # a suite without one hashes as it did before
        parts += (conversation,)
    for part in parts:
        _add(digest, part.encode("utf-8"))
    for path in suite.prompt_files:
        _add(digest, path.read_bytes())
    base = case.path.parent
    for path in sorted(case.files, key=lambda p: os.path.relpath(p, base)):
        _add(digest, os.path.relpath(path, base).encode("utf-8"))
        _add(digest, path.read_bytes())
    return digest.hexdigest()


def _add(digest: hashlib._Hash, data: bytes) -> None:
    digest.update(len(data).to_bytes(8, "big") + data)


@functools.lru_cache(maxsize=4096)
def _case_content(data: bytes) -> str:
    """A case file's content without its bar and provenance, as canonical JSON."""
    try:
        spec = plain_data(data)
    except ValueError:
        return data.hex()
    if isinstance(spec, dict):
        spec = {k: v for k, v in spec.items() if k not in _NOT_SAMPLE_KEYS}
    return json.dumps(spec, sort_keys=True, default=str, ensure_ascii=False)


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
