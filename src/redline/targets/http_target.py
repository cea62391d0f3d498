"""`target: {http: {...}}`: your app's endpoint, with the model providers' limits, retries
and redaction (it is one of them: an `HttpProvider` whose wire format the suite writes)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from redline.config import ModelRef, ProviderConfig
from redline.providers.http_provider import Answer, HttpProvider, MalformedResponse
from redline.targets.answer import BadAnswer, case_payload, read_answer, token_count, tool_calls
from redline.targets.base import identity
from redline.targets.spec import HttpSpec, TargetSpec, env_names, path_steps, resolve_env
from redline.text.templates import render
from redline.vocabulary.completion import ChatRequest
from redline.vocabulary.messages import FinishReason

_WHOLE_EXPRESSION = re.compile(r"^\{\{\s*([A-Za-z_][\w.]*)\s*\}\}$")


class HttpTarget(HttpProvider):
    """Posts the body template filled from the case; reads the answer at the suite's paths.
    Header values read `${VAR}` from the environment and are redacted from every error."""

    def __init__(self, spec: TargetSpec, model: ModelRef | None, env: Mapping[str, str]) -> None:
        assert spec.http is not None
        self.spec = spec
        self.http: HttpSpec = spec.http
        self.pinned = model
        settings = ProviderConfig(
            name="target",
            type="target",
            options={**spec.http.client, "timeout_s": spec.timeout_s},
        )
        self._resolved = {k: resolve_env(v, env)[0] for k, v in spec.http.headers.items()}
        self._secrets = [
            env[n] for v in spec.http.headers.values() for n in env_names(v) if env.get(n)
        ]
        ref = model or ModelRef(alias="target", provider="target", name="")
        super().__init__(
            ref,
            settings,
            base_url=spec.http.url,
            api_key=self._secrets[0] if self._secrets else None,
            price=None,
            ca_bundle=spec.root / str(bundle)
            if (bundle := spec.http.client.get("ca_bundle"))
            else None,
        )
        self.method = spec.http.method

    def identity(self) -> str:
        return identity(self.spec, self.pinned)

    @property
    def endpoint(self) -> str:
        return self.http.url

    def headers(self) -> dict[str, str]:
        return dict(self._resolved)

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        case = case_payload(request, self.pinned.name if self.pinned else None)
        if self.http.body is None:
            return case
        context = {**case["vars"], **case}
        body = fill_body(self.http.body, context)
        return body if isinstance(body, dict) else {"body": body}

    def parse(self, body: Any) -> Answer:
        value = _at(body, self.http.answer, "answer")
        try:
            if isinstance(value, Mapping):
                completion = read_answer(value, latency_ms=0.0, model="")
                text, calls = completion.text, completion.tool_calls
            elif isinstance(value, str):
                text, calls = value, ()
            else:
                raise MalformedResponse(
                    f"the answer at {self.http.answer} is {type(value).__name__}, not text"
                )
            if self.http.tool_calls is not None:
                calls = tool_calls(_at(body, self.http.tool_calls, "tool_calls", optional=True))
        except BadAnswer as exc:
            raise MalformedResponse(str(exc)) from None
        usage = _at(body, self.http.usage, "usage", optional=True) if self.http.usage else None
        usage = usage if isinstance(usage, Mapping) else {}
        model = _at(body, self.http.model, "model", optional=True) if self.http.model else None
        return Answer(
            text=text,
            finish_reason=FinishReason.TOOL_CALLS if calls and not text else FinishReason.STOP,
            model=str(model or ""),
            input_tokens=token_count(usage, "input_tokens", "prompt_tokens"),
            output_tokens=token_count(usage, "output_tokens", "completion_tokens"),
            tool_calls=calls,
        )

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "[redacted]")
        return text


def fill_body(template: Any, context: Mapping[str, Any]) -> Any:
    """The body with each string rendered over the case; a string that is one `{{name}}`
    becomes the value itself (a list of messages stays a list)."""
    if isinstance(template, str):
        whole = _WHOLE_EXPRESSION.match(template)
        if whole is not None:
            value: Any = context
            for part in whole.group(1).split("."):
                if not isinstance(value, Mapping) or part not in value:
                    return render(template, context)
                value = value[part]
            return value
        return render(template, context)
    if isinstance(template, Mapping):
        return {k: fill_body(v, context) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_body(v, context) for v in template]
    return template


def _at(body: Any, path: str, what: str, *, optional: bool = False) -> Any:
    value = body
    for step in path_steps(path):
        if _has(value, step):
            value = value[step]
        elif optional:
            return None
        else:
            shown = json.dumps(body, ensure_ascii=False)[:200]
            raise MalformedResponse(f"no {what} at {path} in the response: {shown}")
    return value


def _has(value: Any, step: str | int) -> bool:
    if isinstance(step, int):
        return isinstance(value, list) and -len(value) <= step < len(value)
    return isinstance(value, Mapping) and step in value
