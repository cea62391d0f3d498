"""Reading what a request sends besides one system and one user text: `messages:`,
`tools:`, `tool_choice:`, `response_format:`, `tool_results:` and images.

Transcripts are copied verbatim from the incident, inline or as `file://` JSON (an array)
or JSONL (one message a line), in the OpenAI chat format; Anthropic's content blocks
(`tool_use`, `tool_result`, base64 `image`) are read as the same messages. The reader works
on plain data with key paths, like the rest of the case-file model, so the loader and the
guard see the same problems: each at the key path it is about (the loader places it at its
line and column); one inside a referenced JSON file names that file, its line and column.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from redline.casemodel.schema import schema_problem
from redline.casemodel.values import did_you_mean, kind_name
from redline.vocabulary.messages import (
    ImagePart,
    Message,
    Part,
    ResponseFormat,
    Role,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolChoiceMode,
    ToolDefinition,
    ToolFixture,
)

FILE_REF = "file://"
KeyPath = tuple[str | int, ...]
#: (where, message, hint): how a problem is reported.
Report = Callable[[KeyPath, str, str], None]
#: The bytes of a file by its path (None: not there); None when files are not read.
Reader = Callable[[str], bytes | None]

#: Media types a provider takes as an image.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_ROLES = tuple(r.value for r in Role)
_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
_RESPONSE_FORMAT_KEYS = frozenset({"json_schema", "strict", "name"})
_FIXTURE_KEYS = frozenset({"tool", "args", "content"})
_MESSAGE_EXAMPLE = "- {role: user, content: Where is my refund?}"
_RELATIVE = "file:// paths are relative to the file that names them"


@dataclass
class ConversationReader:
    """Reads the conversation keys of one file (in `folder`), reporting each problem."""

    report: Report
    folder: str
    read: Reader | None
    show: Callable[[str], str] = str
    #: Files read (transcripts, tool files, schemas, images, fixtures): part of the hash.
    files: list[str] = field(default_factory=list)

    # -- messages --------------------------------------------------------

    def messages(
        self, value: Any, at: KeyPath = ("messages",), earlier: Iterable[Message] = ()
    ) -> tuple[Message, ...]:
        """`messages:` inline or from a file; `earlier` are the messages before these (the
        suite's shared ones), whose calls a `tool` message here may answer."""
        if value is None:
            return ()
        found = self._document(value, at, lines=True)
        if found is None:
            return ()
        entries, where, folder = found
        if not isinstance(entries, list):
            self._wrong(at, where, "`messages` must be a list of messages", entries)
            return ()
        if not entries:
            self.report(at, "`messages` is empty", _MESSAGE_EXAMPLE)
            return ()
        calls = {c.id for m in earlier for c in m.tool_calls}
        out: list[Message] = []
        for i, entry in enumerate(entries):
            entry_at, label = self._entry(at, where, i, "message")
            for message in self._message(entry, entry_at, label, folder):
                if message.role is Role.TOOL and message.tool_call_id not in calls:
                    known = ", ".join(sorted(calls)) or "none"
                    self.report(
                        entry_at,
                        f"{label}this tool message answers call {message.tool_call_id!r}, "
                        f"which no earlier assistant message made (calls so far: {known})",
                        "give the assistant turn's tool_calls entry that id, or fix tool_call_id",
                    )
                calls.update(c.id for c in message.tool_calls)
                out.append(message)
        return tuple(out)

    def _message(self, entry: Any, at: KeyPath, label: str, folder: str) -> list[Message]:
        if not isinstance(entry, dict):
            self.report(at, f"{label}a message must be a mapping, not {kind_name(entry)}", "")
            return []
        self._unknown(entry, _MESSAGE_KEYS, at, label, "a message")
        role = entry.get("role")
        if role not in _ROLES:
            shown = (
                "no role"
                if role is None
                else f"unknown role {role!r}{did_you_mean(str(role), _ROLES)}"
            )
            self.report(
                at if label or role is None else (*at, "role"),
                f"{label}{shown}",
                f"a message's role is one of {', '.join(_ROLES)}",
            )
            return []
        kind = Role(role)
        content = entry.get("content")
        content_at = at if label else (*at, "content")
        if isinstance(content, list) and _anthropic_blocks(content):
            return self._anthropic(kind, content, content_at, label, folder)
        parts = self._content(content, content_at, label, folder, kind)
        calls = self._tool_calls(
            entry.get("tool_calls"), at if label else (*at, "tool_calls"), label
        )
        if calls and kind is not Role.ASSISTANT:
            self.report(
                at,
                f"{label}a {role} message has `tool_calls`; only an assistant turn calls tools",
                "give the calls to the assistant message that made them",
            )
        answered = entry.get("tool_call_id")
        if kind is Role.TOOL and not isinstance(answered, str):
            self.report(
                at,
                f"{label}a tool message needs `tool_call_id:` (the id of the call it answers)",
                "copy the id from the assistant turn's tool_calls entry",
            )
            return []
        name = entry.get("name")
        return [
            Message(
                kind,
                parts if parts is not None else "",
                name=None if name is None else str(name),
                tool_calls=calls,
                tool_call_id=answered if kind is Role.TOOL else None,
            )
        ]

    def _content(
        self, value: Any, at: KeyPath, label: str, folder: str, role: Role
    ) -> str | tuple[Part, ...] | None:
        if value is None:
            return ""
        if isinstance(value, str) and value.startswith(FILE_REF):
            return self._text_file(value, at, label, folder)
        if isinstance(value, bool | dict):
            self.report(at, f"{label}a message's content is text or a list of parts", "Hello")
            return None
        if not isinstance(value, list):
            return str(value)
        parts: list[Part] = []
        for i, part in enumerate(value):
            read = self._part(part, at if label else (*at, i), label, folder, role)
            if read is not None:
                parts.append(read)
        return tuple(parts)

    def _part(self, part: Any, at: KeyPath, label: str, folder: str, role: Role) -> Part | None:
        if isinstance(part, str):
            return TextPart(part)
        if isinstance(part, dict) and "image" in part:
            if role is not Role.USER:
                self.report(at, f"{label}only a user message may hold an image", "")
                return None
            return self.image(part["image"], at if label else (*at, "image"), label, folder)
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            return TextPart(part["text"])
        url = part.get("image_url") if isinstance(part, dict) else None
        target = url.get("url") if isinstance(url, dict) else url
        if isinstance(target, str):
            return self._data_url(target, at, label)
        self.report(
            at,
            f"{label}a content part is text, `{{image: file://...}}`, `{{type: text, text: ...}}`"
            " or `{type: image_url, image_url: {url: data:...}}`",
            "write the message's text as `content: ...`",
        )
        return None

    def image(self, ref: Any, at: KeyPath, label: str, folder: str) -> ImagePart | None:
        """An image file (`file://` relative to the file naming it): it must be there and be
        a PNG, JPEG, GIF or WebP image."""
        if not isinstance(ref, str) or not ref.startswith(FILE_REF):
            self.report(at, f"{label}an image is a file reference", "image: file://photos/x.jpg")
            return None
        relative = ref[len(FILE_REF) :]
        if self.read is None:
            return ImagePart("image/png", b"", relative)
        path = posixpath.join(folder, relative)
        data = self.read(path)
        if data is None:
            self.report(at, f"{label}image {self.show(path)} does not exist", _RELATIVE)
            return None
        media = image_type(data)
        if media is None:
            self.report(
                at,
                f"{label}{self.show(path)} is not an image (PNG, JPEG, GIF or WebP)",
                "give the photo file itself",
            )
            return None
        self.files.append(path)
        return ImagePart(media, data, relative)

    def _data_url(self, url: str, at: KeyPath, label: str) -> ImagePart | None:
        head, _, payload = url.partition(",")
        data = _b64(payload)
        media = image_type(data)
        if not head.startswith("data:") or media is None:
            self.report(at, f"{label}an image_url must be a base64 data URL of an image", "")
            return None
        return ImagePart(media, data)

    def _tool_calls(self, value: Any, at: KeyPath, label: str) -> tuple[ToolCall, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            self.report(at, f"{label}`tool_calls` must be a list", "[{id: call_1, function: ...}]")
            return ()
        calls = []
        for i, entry in enumerate(value):
            entry_at = at if label else (*at, i)
            entry = entry if isinstance(entry, dict) else {}
            call_id, function = entry.get("id"), entry.get("function")
            if not isinstance(call_id, str) or not call_id:
                self.report(
                    entry_at,
                    f"{label}a tool_calls entry has no `id`",
                    "copy the call's id from the transcript (a tool message answers it by id)",
                )
                continue
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str) or not name:
                self.report(
                    entry_at, f"{label}a tool_calls entry needs `function: {{name, arguments}}`", ""
                )
                continue
            raw = function.get("arguments", {}) if isinstance(function, dict) else {}
            text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
            calls.append(ToolCall(call_id, name, text))
        return tuple(calls)

    def _anthropic(
        self, role: Role, blocks: list[Any], at: KeyPath, label: str, folder: str
    ) -> list[Message]:
        """Anthropic content blocks: text and images, `tool_use` (an assistant's calls) and
        `tool_result` (a user turn answering them) as the same messages."""
        texts: list[Part] = []
        calls: list[ToolCall] = []
        results: list[Message] = []
        for i, block in enumerate(blocks):
            block_at = at if label else (*at, i)
            block = block if isinstance(block, dict) else {}
            kind = block.get("type")
            if kind == "text":
                texts.append(TextPart(str(block.get("text", ""))))
            elif kind == "image":
                source = block.get("source")
                data = _b64(str(source.get("data", ""))) if isinstance(source, dict) else b""
                media = image_type(data)
                if media is None:
                    self.report(
                        block_at, f"{label}the image block's data is not a base64 image", ""
                    )
                    continue
                texts.append(ImagePart(media, data))
            elif kind == "tool_use":
                call_id = block.get("id")
                if not isinstance(call_id, str) or not call_id:
                    self.report(
                        block_at, f"{label}a tool_use block has no `id`", "copy it from the log"
                    )
                    continue
                raw = block.get("input", {})
                arguments = json.dumps(raw, ensure_ascii=False, separators=(",", ":"))
                calls.append(ToolCall(call_id, str(block.get("name", "")), arguments))
            elif kind == "tool_result":
                answered = block.get("tool_use_id")
                text = _block_text(block.get("content", ""))
                results.append(Message(Role.TOOL, text, tool_call_id=str(answered or "")))
            else:
                self.report(block_at, f"{label}unknown content block type {kind!r}", "")
        if texts or calls or not results:
            body: str | tuple[Part, ...] = (
                "".join(t.text for t in texts if isinstance(t, TextPart))
                if all(isinstance(t, TextPart) for t in texts)
                else tuple(texts)
            )
            return [*results, Message(role, body, tool_calls=tuple(calls))]
        return results

    # -- tools -----------------------------------------------------------

    def tools(self, value: Any, at: KeyPath = ("tools",)) -> tuple[ToolDefinition, ...]:
        """`tools:` inline, or `file://` to a JSON array of function definitions."""
        if value is None:
            return ()
        found = self._document(value, at)
        if found is None:
            return ()
        entries, where, _ = found
        if not isinstance(entries, list):
            self._wrong(at, where, "`tools` must be a list of function definitions", entries)
            return ()
        tools: list[ToolDefinition] = []
        for i, entry in enumerate(entries):
            entry_at, label = self._entry(at, where, i, "tool")
            tool = self._tool(entry, entry_at, label)
            if tool is None:
                continue
            if any(t.name == tool.name for t in tools):
                self.report(entry_at, f"{label}tool {tool.name!r} is declared twice", "")
                continue
            tools.append(tool)
        return tuple(tools)

    def _tool(self, entry: Any, at: KeyPath, label: str) -> ToolDefinition | None:
        entry = entry if isinstance(entry, dict) else {}
        nested = isinstance(entry.get("function"), dict)
        spec = entry["function"] if nested else entry
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            self.report(
                at,
                f"{label}a tool definition needs a `name`",
                '{"type": "function", "function": {"name": ..., "parameters": {...}}}',
            )
            return None
        key = "parameters" if "parameters" in spec else "input_schema"
        schema = spec.get(key, {"type": "object"})
        where = at if label else (*at, *(("function",) if nested else ()), key)
        problem = schema_problem(schema)
        if problem is not None:
            self.report(
                where,
                f"{label}tool {name!r} parameters is not a JSON Schema: {problem}",
                "fix the schema (see json-schema.org)",
            )
            return None
        strict = spec.get("strict")
        return ToolDefinition(
            name,
            schema,
            str(spec.get("description", "")),
            strict if isinstance(strict, bool) else None,
        )

    def tool_choice(
        self,
        value: Any,
        tools: Iterable[ToolDefinition] | None,
        at: KeyPath = ("tool_choice",),
    ) -> ToolChoice | None:
        """`auto`, `none`, `required`, or a declared function: `{function: {name: x}}`
        (`tools` None: not known here, the name is not checked)."""
        if value is None:
            return None
        if value in ("auto", "none", "required"):
            return ToolChoice(ToolChoiceMode(value))
        named = value.get("function") if isinstance(value, dict) else None
        target = named.get("name") if isinstance(named, dict) else None
        if target is None and isinstance(value, dict):
            target = value.get("name")
        if not isinstance(target, str):
            self.report(
                at,
                "tool_choice is auto, none, required or a function",
                "tool_choice: {function: {name: lookup_order}}",
            )
            return None
        names = None if tools is None else [t.name for t in tools]
        if names is not None and target not in names:
            self.report(
                at,
                f"tool_choice names {target!r}, which `tools:` does not declare"
                + did_you_mean(target, names),
                "declare the tool under `tools:` or name a declared one",
            )
            return None
        return ToolChoice(ToolChoiceMode.FUNCTION, target)

    # -- structured output -----------------------------------------------

    def response_format(
        self, value: Any, at: KeyPath = ("response_format",)
    ) -> ResponseFormat | None:
        """`{json_schema: file://schemas/x.json (or inline), strict: true, name: ...}`."""
        if value is None:
            return None
        example = "{json_schema: file://schemas/answer.json, strict: true}"
        if not isinstance(value, dict):
            self.report(at, f"`response_format` must be a mapping, not {kind_name(value)}", example)
            return None
        self._unknown(value, _RESPONSE_FORMAT_KEYS, at, "", "response_format")
        if "json_schema" not in value:
            self.report(at, "response_format needs `json_schema:`", example)
            return None
        schema_at: KeyPath = (*at, "json_schema")
        found = self._document(value["json_schema"], schema_at)
        if found is None:
            return None
        schema, where, _ = found
        problem = schema_problem(schema)
        if problem is not None:
            self.report(
                schema_at,
                f"{where}response_format.json_schema is not a JSON Schema: {problem}",
                "fix the schema (see json-schema.org)",
            )
            return None
        strict, name = value.get("strict", False), value.get("name", "response")
        if not isinstance(strict, bool):
            self.report((*at, "strict"), "`strict` must be true or false", "strict: true")
            return None
        return ResponseFormat(schema, str(name), strict)

    # -- tool fixtures ---------------------------------------------------

    def tool_results(
        self,
        value: Any,
        tools: Iterable[ToolDefinition] | None,
        at: KeyPath = ("tool_results",),
    ) -> tuple[ToolFixture, ...]:
        """`tool_results:` — for a declared tool (and optionally matching arguments), the
        content the loop answers with: text (verbatim), a file's exact text, or JSON.
        `tools` None: the suite's tools are not known here (a tools file left unread)."""
        if value is None:
            return ()
        example = "- {tool: lookup_order, args: {order_id: A-1}, content: file://orders/a1.json}"
        if not isinstance(value, list):
            self.report(at, f"`tool_results` must be a list, not {kind_name(value)}", example)
            return ()
        names = None if tools is None else [t.name for t in tools]
        out = []
        for i, entry in enumerate(value):
            entry_at: KeyPath = (*at, i)
            if not isinstance(entry, dict):
                self.report(entry_at, "a tool_results entry must be a mapping", example)
                continue
            self._unknown(entry, _FIXTURE_KEYS, entry_at, "", "a tool_results entry")
            tool, args = entry.get("tool"), entry.get("args")
            if not isinstance(tool, str):
                self.report(entry_at, "a tool_results entry needs `tool:` (a tool name)", example)
                continue
            if names is not None and tool not in names:
                declared = ", ".join(names) or "none"
                self.report(
                    (*entry_at, "tool"),
                    f"tool_results answers {tool!r}, which the suite does not declare "
                    f"(declared: {declared}){did_you_mean(tool, names)}",
                    "declare the tool under the suite's `tools:`, or fix the name",
                )
                continue
            if args is not None and not isinstance(args, dict):
                self.report((*entry_at, "args"), "`args` must be a mapping of argument values", "")
                continue
            if "content" not in entry:
                self.report(entry_at, "a tool_results entry needs `content:` (what it returns)", "")
                continue
            text = self._fixture_text(entry["content"], (*entry_at, "content"))
            if text is not None:
                out.append(ToolFixture(tool, text, args))
        return tuple(out)

    def _fixture_text(self, value: Any, at: KeyPath) -> str | None:
        if isinstance(value, str) and value.startswith(FILE_REF):
            return self._text_file(value, at, "", self.folder)
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False)

    # -- files -----------------------------------------------------------

    def _text_file(self, ref: str, at: KeyPath, label: str, folder: str) -> str | None:
        """The exact text of the file a `file://` value names (a tool's logged answer)."""
        if self.read is None:
            return ref
        path = posixpath.join(folder, ref[len(FILE_REF) :])
        raw = self.read(path)
        if raw is None:
            self.report(at, f"{label}file {self.show(path)} does not exist", _RELATIVE)
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.report(at, f"{label}{self.show(path)} is not UTF-8 text", "save it as UTF-8")
            return None
        self.files.append(path)
        return text

    def _document(
        self, value: Any, at: KeyPath, *, lines: bool = False
    ) -> tuple[Any, str, str] | None:
        """(the value, "" , this file's folder) for an inline value; for a `file://` value
        the JSON (or JSON Lines) document it names, the prefix its problems carry, and the
        folder its own file:// references are relative to. None (reported) when unusable."""
        if not (isinstance(value, str) and value.startswith(FILE_REF)):
            return value, "", self.folder
        if self.read is None:
            return None
        text = self._text_file(value, at, "", self.folder)
        if text is None:
            return None
        path = posixpath.join(self.folder, value[len(FILE_REF) :])
        shown = self.show(path)
        if lines and path.endswith(".jsonl"):
            data: list[Any] = []
            for number, line in enumerate(text.split("\n"), start=1):
                if not line.strip():
                    continue
                try:
                    data.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    self.report(
                        at,
                        f"{shown}:{number}:{exc.colno}: not a JSON message: {exc.msg}",
                        "one JSON object a line",
                    )
                    return None
            return data, shown, posixpath.dirname(path)
        try:
            return json.loads(text), shown, posixpath.dirname(path)
        except json.JSONDecodeError as exc:
            self.report(
                at, f"{shown}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}", "fix the JSON"
            )
            return None

    def _unknown(
        self, value: dict[Any, Any], allowed: frozenset[str], at: KeyPath, label: str, what: str
    ) -> None:
        """Each key of `value` that `what` does not have, at the key (in a file: at `at`)."""
        for key in value:
            if key not in allowed:
                self.report(
                    at if label else (*at, str(key)),
                    f"{label}unknown key {key!r} in {what}{did_you_mean(str(key), allowed)}",
                    f"{what} has {', '.join(sorted(allowed))}",
                )

    def _entry(self, at: KeyPath, where: str, index: int, what: str) -> tuple[KeyPath, str]:
        """Where entry `index` of a list is reported: its own key path inline; in a file,
        the referencing key, with the file and the entry named in the message."""
        if not where:
            return (*at, index), ""
        return at, f"{where}, {what} {index + 1}: "

    def _wrong(self, at: KeyPath, where: str, message: str, value: Any) -> None:
        self.report(at, f"{where + ': ' if where else ''}{message}, not {kind_name(value)}", "")


def image_type(data: bytes) -> str | None:
    """The media type of an image's bytes (PNG, JPEG, GIF, WebP), None when it is none."""
    import puremagic

    try:
        media = puremagic.from_string(data, mime=True)
    except (puremagic.PureError, ValueError):
        return None
    return media if media in IMAGE_TYPES else None


def _anthropic_blocks(content: list[Any]) -> bool:
    kinds = {b.get("type") for b in content if isinstance(b, dict)}
    return bool(kinds & {"tool_use", "tool_result", "image"})


def _block_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(str(v.get("text", "")) for v in value if isinstance(v, dict))
    return json.dumps(value, ensure_ascii=False)


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return b""


__all__ = ["IMAGE_TYPES", "ConversationReader", "image_type"]
