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
from collections.abc import Mapping
from dataclasses import dataclass

from redline.config import Config
from redline.vocabulary.records import SampleRecord

MIN_KEY_LENGTH = 8


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
        return cls(tuple(sorted(found.items(), key=lambda kv: (-len(kv[0]), kv[0]))))

    def text(self, text: str) -> str:
        for value, name in self.keys:
            if value in text:
                text = text.replace(value, f"[redacted ${name}]")
        return text

    def sample(self, sample: SampleRecord) -> SampleRecord:
        """The sample with every known key replaced in its output, error and reasons;
        the sample itself when no key appears in it (the usual case: nothing is copied)."""
        if not self.keys or not self._found(sample):
            return sample
        return dataclasses.replace(
            sample,
            output=self.text(sample.output),
            error=None if sample.error is None else self.text(sample.error),
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
