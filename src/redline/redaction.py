"""API keys never reach the store: not in errors, and not in what a model wrote either.

A provider error can quote the key (servers echo headers), and a model can write it into
a perfectly successful answer (a prompt that leaks its own configuration). Every key the
configuration reads from the environment is replaced, wherever it appears in a sample
(output, error, assertion reasons), by `[redacted $VARIABLE]` before the sample is stored.
Values shorter than MIN_KEY_LENGTH are not keys anyone issues, and replacing them would
corrupt ordinary text, so they are left alone.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from redline.config import Config
from redline.vocabulary.records import SampleRecord

MIN_KEY_LENGTH = 8
_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s'\"]+@")


def redact_url(text: str) -> str:
    """`text` with the userinfo of every URL in it hidden (`scheme://user:pw@host` →
    `scheme://***@host`): proxy and base URLs carry credentials that way."""
    return _USERINFO.sub(r"\g<scheme>***@", text)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every given secret (longest first; none shorter than MIN_KEY_LENGTH) and
    every URL's userinfo hidden."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_KEY_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, "[redacted]")
    return redact_url(text)


@dataclass(frozen=True)
class KeyRedactor:
    #: (key value, variable name), longest value first so no key hides part of another.
    keys: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_config(cls, config: Config, env: Mapping[str, str]) -> KeyRedactor:
        found = {
            value: name
            for name in config.key_variables()
            if len(value := env.get(name, "").strip()) >= MIN_KEY_LENGTH
        }
        found |= {
            secret: name for secret, name in _proxy_secrets(env) if len(secret) >= MIN_KEY_LENGTH
        }
        return cls(tuple(sorted(found.items(), key=lambda kv: (-len(kv[0]), kv[0]))))

    def text(self, text: str) -> str:
        for value, name in self.keys:
            if value in text:
                text = text.replace(value, f"[redacted ${name}]")
        return text

    def sample(self, sample: SampleRecord) -> SampleRecord:
        """The sample with every known key replaced in its output, error and reasons;
        the sample itself when no key appears in it (the usual case: nothing is copied)."""
        error = None if sample.error is None else redact_url(sample.error)
        if not self.keys or not self._found(sample):
            return sample if error == sample.error else dataclasses.replace(sample, error=error)
        return dataclasses.replace(
            sample,
            output=self.text(sample.output),
            error=None if error is None else self.text(error),
            assertions=tuple(
                a if not self._in(a.reason) else dataclasses.replace(a, reason=self.text(a.reason))
                for a in sample.assertions
            ),
        )

    def _in(self, text: str) -> bool:
        return any(value in text for value, _ in self.keys)

    def _found(self, sample: SampleRecord) -> bool:
        """Whether any key appears in the sample's output, error or assertion reasons."""
        texts = [sample.output, *(a.reason for a in sample.assertions)]
        if sample.error is not None:
            texts.append(sample.error)
        return self._in("\n".join(texts))


def _proxy_secrets(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(password, variable) of every proxy variable written with credentials."""
    found = []
    for name, value in env.items():
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy") and "@" in value:
            password = urlsplit(value if "://" in value else f"http://{value}").password
            if password:
                found.append((unquote(password), name))
    return found
