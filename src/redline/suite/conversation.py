"""Reading what a request sends besides one system and one user text: `messages:`,
`tools:`, `tool_choice:`, `response_format:`, `tool_results:` and images.

Transcripts are copied verbatim from the incident, inline or as `file://` JSON (an array)
or JSONL (one message a line), in the OpenAI chat format; Anthropic's content blocks
(`tool_use`, `tool_result`, base64 `image`) are read as the same messages. Every problem is
reported where it is: the case file's line and column, or the line and column inside the
referenced JSON file, with a hint.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline.documents.reading import NodeReader
from redline.documents.yamlsource import (
    FILE_REF,
    Mark,
    Node,
    did_you_mean,
    load_text,
    read_verbatim,
)
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

#: Media types a provider takes as an image.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_ROLES = tuple(r.value for r in Role)
_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
_RESPONSE_FORMAT_KEYS = frozenset({"json_schema", "strict", "name"})
_FIXTURE_KEYS = frozenset({"tool", "args", "content"})
_MESSAGE_EXAMPLE = "- {role: user, content: Where is my refund?}"


@dataclass
class ConversationReader:
    """Reads the conversation keys of one file, recording problems; `show` words a path."""

    reader: NodeReader
    folder: Path
    show: Callable[[Path], str]
    #: Files read (JSON transcripts, tool files, schemas, images): part of the hash.
    files: list[Path] = field(default_factory=list)

    def add(self, mark: Mark, message: str, hint: str = "") -> None:
        self.reader.add(mark, message, hint)

    # -- messages --------------------------------------------------------

    def messages(self, node: Node | None, earlier: Iterable[Message] = ()) -> tuple[Message, ...]:
        """`messages:` inline or from a file; `earlier` are the messages before these (the
        suite's shared ones), whose calls a `tool` message here may answer."""
        if node is None:
            return ()
        entries = self._document(node, "messages", allow_lines=True)
        if entries is None:
            return ()
        root, folder = entries
        if not root.is_seq:
            self.reader.wrong_type(root, "messages", "a list of messages", _MESSAGE_EXAMPLE)
            return ()
        calls = {c.id for m in earlier for c in m.tool_calls}
        out: list[Message] = []
        for entry in root.children():
            for message in self._message(entry, folder):
                if message.role is Role.TOOL and message.tool_call_id not in calls:
                    known = ", ".join(sorted(calls)) or "none"
                    self.add(
                        entry.mark,
                        f"this tool message answers call {message.tool_call_id!r}, which no "
                        f"earlier assistant message made (calls so far: {known})",
                        "give the assistant turn's tool_calls entry that id, or fix tool_call_id",
                    )
                calls.update(c.id for c in message.tool_calls)
                out.append(message)
        if not root.children():
            self.add(node.mark, "`messages` is empty", _MESSAGE_EXAMPLE)
        return tuple(out)

    def _message(self, entry: Node, folder: Path) -> list[Message]:
        if not entry.is_map:
            self.add(entry.mark, "a message must be a mapping", _MESSAGE_EXAMPLE)
            return []
        self.reader.unknown_keys(entry, _MESSAGE_KEYS, "a message")
        role_node = entry.get("role")
        role = role_node.value if role_node is not None else None
        if role_node is None or role not in _ROLES:
            shown = "no role" if role_node is None else f"unknown role {role!r}"
            self.add(
                (role_node or entry).mark,
                f"{shown}{did_you_mean(str(role), _ROLES) if role_node else ''}",
                f"a message's role is one of {', '.join(_ROLES)}",
            )
            return []
        content = entry.get("content")
        if content is not None and content.is_seq and _anthropic_blocks(content):
            return self._anthropic(Role(role), content, folder)
        parts = self._content(content, folder, Role(role))
        name = entry.get("name")
        calls = self._tool_calls(entry.get("tool_calls"))
        if calls and role != Role.ASSISTANT:
            self.add(
                entry.mark,
                f"a {role} message has `tool_calls`; only an assistant turn calls tools",
                "give the calls to the assistant message that made them",
            )
        answered = entry.get("tool_call_id")
        if role == Role.TOOL and (answered is None or not isinstance(answered.value, str)):
            self.add(
                (answered or entry).mark,
                "a tool message needs `tool_call_id:` (the id of the call it answers)",
                "copy the id from the assistant turn's tool_calls entry",
            )
            return []
        return [
            Message(
                Role(role),
                parts if parts is not None else "",
                name=str(name.value) if name is not None and name.value is not None else None,
                tool_calls=calls,
                tool_call_id=str(answered.value) if role == Role.TOOL and answered else None,
            )
        ]

    def _content(
        self, node: Node | None, folder: Path, role: Role
    ) -> str | tuple[Part, ...] | None:
        if node is None or (node.is_scalar and node.value is None):
            return ""
        if node.is_scalar and isinstance(node.value, str) and node.value.startswith(FILE_REF):
            return self._verbatim(node, folder)
        if node.is_scalar:
            return str(node.value)
        if not node.is_seq:
            self.reader.wrong_type(node, "content", "text or a list of parts", "Hello")
            return None
        parts: list[Part] = []
        for part in node.children():
            read = self._part(part, folder, role)
            if read is not None:
                parts.append(read)
        return tuple(parts)

    def _part(self, node: Node, folder: Path, role: Role) -> Part | None:
        if node.is_scalar and isinstance(node.value, str):
            return TextPart(node.value)
        image = node.get("image")
        if image is not None:
            if role is not Role.USER:
                self.add(node.mark, "only a user message may hold an image")
                return None
            return self.image(image, folder)
        text = node.get("text")
        if text is not None and text.is_scalar:
            return TextPart(str(text.value))
        url = node.get("image_url")
        if url is not None:
            target = url.get("url") if url.is_map else url
            if target is not None and isinstance(target.value, str):
                return self._data_url(target)
        self.add(
            node.mark,
            "a content part is text, `{image: file://...}`, `{type: text, text: ...}` or "
            "`{type: image_url, image_url: {url: data:...}}`",
            "write the message's text as `content: ...`",
        )
        return None

    def _verbatim(self, node: Node, folder: Path) -> str | None:
        """The exact text of the file a `file://` content names (a tool's logged answer)."""
        path = folder / str(node.value)[len(FILE_REF) :]
        if not path.is_file():
            self.add(
                node.mark,
                f"file {self.show(path)} does not exist",
                "file:// paths are relative to the file that names them",
            )
            return None
        try:
            text = read_verbatim(path)
        except UnicodeDecodeError:
            self.add(node.mark, f"{self.show(path)} is not UTF-8 text")
            return None
        self.files.append(path.resolve())
        return text

    def image(self, node: Node, folder: Path) -> ImagePart | None:
        """An image file (`file://` relative to the file holding it): it must be there and
        be a PNG, JPEG, GIF or WebP image."""
        ref = node.value
        if not node.is_scalar or not isinstance(ref, str) or not ref.startswith(FILE_REF):
            self.add(node.mark, "an image is a file reference", "image: file://photos/x.jpg")
            return None
        path = folder / ref[len(FILE_REF) :]
        if not path.is_file():
            self.add(
                node.mark,
                f"image {self.show(path)} does not exist",
                "file:// paths are relative to the file that names them",
            )
            return None
        data = path.read_bytes()
        media = image_type(data)
        if media is None:
            self.add(
                node.mark,
                f"{self.show(path)} is not an image (PNG, JPEG, GIF or WebP)",
                "give the photo file itself",
            )
            return None
        self.files.append(path.resolve())
        return ImagePart(media, data, ref[len(FILE_REF) :])

    def _data_url(self, node: Node) -> ImagePart | None:
        head, _, payload = str(node.value).partition(",")
        media = head.removeprefix("data:").removesuffix(";base64")
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            data = b""
        if not head.startswith("data:") or image_type(data) is None:
            self.add(node.mark, "an image_url must be a base64 data URL of an image")
            return None
        return ImagePart(media, data)

    def _tool_calls(self, node: Node | None) -> tuple[ToolCall, ...]:
        if node is None:
            return ()
        if not node.is_seq:
            self.reader.wrong_type(node, "tool_calls", "a list", "[{id: call_1, function: ...}]")
            return ()
        calls = []
        for entry in node.children():
            call_id = entry.get("id")
            function = entry.get("function")
            if call_id is None or not isinstance(call_id.value, str) or not call_id.value:
                self.add(
                    entry.mark,
                    "a tool_calls entry has no `id`",
                    "copy the call's id from the transcript (a tool message answers it by id)",
                )
                continue
            name = function.get("name") if function is not None else None
            if name is None or not isinstance(name.value, str):
                self.add(entry.mark, "a tool_calls entry needs `function: {name, arguments}`")
                continue
            arguments = function.get("arguments") if function is not None else None
            raw = arguments.plain() if arguments is not None else {}
            text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
            calls.append(ToolCall(call_id.value, name.value, text))
        return tuple(calls)

    def _anthropic(self, role: Role, content: Node, folder: Path) -> list[Message]:
        """Anthropic content blocks: text and images, `tool_use` (an assistant's calls) and
        `tool_result` (a user turn answering them) as the same messages."""
        texts: list[Part] = []
        calls: list[ToolCall] = []
        results: list[Message] = []
        for block in content.children():
            kind = block.get("type")
            kind_value = kind.value if kind is not None else None
            if kind_value == "text":
                text = block.get("text")
                texts.append(TextPart(str(text.value if text is not None else "")))
            elif kind_value == "image":
                source = block.get("source")
                data = source.get("data") if source is not None else None
                if data is None:
                    self.add(block.mark, "an image block needs source: {type: base64, data}")
                    continue
                decoded = _b64(str(data.value))
                media = image_type(decoded)
                if media is None:
                    self.add(data.mark, "the image block's data is not a base64 image")
                    continue
                texts.append(ImagePart(media, decoded))
            elif kind_value == "tool_use":
                call_id, name = block.get("id"), block.get("name")
                if call_id is None or not isinstance(call_id.value, str) or not call_id.value:
                    self.add(
                        block.mark, "a tool_use block has no `id`", "copy it from the transcript"
                    )
                    continue
                args = block.get("input")
                raw = args.plain() if args is not None else {}
                calls.append(
                    ToolCall(
                        call_id.value,
                        str(name.value if name is not None else ""),
                        json.dumps(raw, ensure_ascii=False, separators=(",", ":")),
                    )
                )
            elif kind_value == "tool_result":
                answered = block.get("tool_use_id")
                inner = block.get("content")
                answer = _block_text(inner.plain() if inner is not None else "")
                results.append(
                    Message(
                        Role.TOOL,
                        answer,
                        tool_call_id=str(answered.value) if answered is not None else "",
                    )
                )
            else:
                self.add(block.mark, f"unknown content block type {kind_value!r}")
        out = results
        if texts or calls or not results:
            only_text = all(isinstance(t, TextPart) for t in texts)
            body: str | tuple[Part, ...] = (
                "".join(t.text for t in texts if isinstance(t, TextPart))
                if only_text
                else tuple(texts)
            )
            out = [*results, Message(role, body, tool_calls=tuple(calls))]
        return out

    # -- tools -----------------------------------------------------------

    def tools(self, node: Node | None) -> tuple[ToolDefinition, ...]:
        """`tools:` inline, or `file://` to a JSON array of function definitions."""
        if node is None:
            return ()
        found = self._document(node, "tools")
        if found is None:
            return ()
        root, _ = found
        if not root.is_seq:
            self.reader.wrong_type(root, "tools", "a list of function definitions", "[...]")
            return ()
        tools: list[ToolDefinition] = []
        for entry in root.children():
            tool = self._tool(entry)
            if tool is None:
                continue
            if any(t.name == tool.name for t in tools):
                self.add(entry.mark, f"tool {tool.name!r} is declared twice")
                continue
            tools.append(tool)
        return tuple(tools)

    def _tool(self, entry: Node) -> ToolDefinition | None:
        spec = entry.get("function") or entry
        name = spec.get("name")
        if name is None or not isinstance(name.value, str) or not name.value:
            self.add(
                entry.mark,
                "a tool definition needs a `name`",
                '{"type": "function", "function": {"name": ..., "parameters": {...}}}',
            )
            return None
        params = spec.get("parameters") or spec.get("input_schema")
        schema: Any = params.plain() if params is not None else {"type": "object"}
        if not schema_problem(self, params or entry, schema, f"tool {name.value!r} parameters"):
            return None
        description = spec.get("description")
        strict = spec.get("strict")
        return ToolDefinition(
            name.value,
            schema,
            str(description.value) if description is not None else "",
            strict.value if strict is not None and isinstance(strict.value, bool) else None,
        )

    def tool_choice(self, node: Node | None, tools: Iterable[ToolDefinition]) -> ToolChoice | None:
        """`auto`, `none`, `required`, or a declared function: `{function: {name: x}}`."""
        if node is None:
            return None
        modes = ("auto", "none", "required")
        if node.is_scalar and node.value in modes:
            return ToolChoice(ToolChoiceMode(node.value))
        named = node.get("function") if node.is_map else None
        target = (named.get("name") if named is not None else None) or node.get("name")
        if target is None or not isinstance(target.value, str):
            self.add(
                node.mark,
                "tool_choice is auto, none, required or a function",
                "tool_choice: {function: {name: lookup_order}}",
            )
            return None
        names = [t.name for t in tools]
        if target.value not in names:
            self.add(
                target.mark,
                f"tool_choice names {target.value!r}, which `tools:` does not declare"
                f"{did_you_mean(target.value, names)}",
                "declare the tool under `tools:` or name a declared one",
            )
            return None
        return ToolChoice(ToolChoiceMode.FUNCTION, target.value)

    # -- structured output -----------------------------------------------

    def response_format(self, node: Node | None) -> ResponseFormat | None:
        """`{json_schema: file://schemas/x.json (or inline), strict: true, name: ...}`."""
        if node is None:
            return None
        example = "{json_schema: file://schemas/answer.json, strict: true}"
        if not node.is_map:
            self.reader.wrong_type(node, "response_format", "a mapping", example)
            return None
        self.reader.unknown_keys(node, _RESPONSE_FORMAT_KEYS, "response_format")
        schema_node = node.get("json_schema")
        if schema_node is None:
            self.add(node.mark, "response_format needs `json_schema:`", example)
            return None
        found = self._document(schema_node, "json_schema")
        if found is None:
            return None
        schema = found[0].plain()
        if not schema_problem(self, found[0], schema, "response_format.json_schema"):
            return None
        strict = self.reader.boolean(node.get("strict"), "strict", False)
        name = self.reader.text(node.get("name"), "name", default="response")
        return ResponseFormat(schema, name or "response", bool(strict))

    # -- tool fixtures ---------------------------------------------------

    def tool_results(
        self, node: Node | None, tools: Iterable[ToolDefinition], variables: Mapping[str, str]
    ) -> tuple[ToolFixture, ...]:
        """`tool_results:` — for a declared tool (and optionally matching arguments), the
        content the loop answers with: text (verbatim), a file's exact text, or JSON."""
        if node is None:
            return ()
        example = "- {tool: lookup_order, args: {order_id: A-1}, content: file://orders/a1.json}"
        if not node.is_seq:
            self.reader.wrong_type(node, "tool_results", "a list", example)
            return ()
        names = [t.name for t in tools]
        out = []
        for entry in node.children():
            if not entry.is_map:
                self.add(entry.mark, "a tool_results entry must be a mapping", example)
                continue
            self.reader.unknown_keys(entry, _FIXTURE_KEYS, "a tool_results entry")
            tool, args, content = entry.get("tool"), entry.get("args"), entry.get("content")
            if tool is None or not isinstance(tool.value, str):
                self.add(
                    entry.mark, "a tool_results entry needs `tool:` (the tool's name)", example
                )
                continue
            if tool.value not in names:
                declared = ", ".join(names) or "none"
                self.add(
                    tool.mark,
                    f"tool_results answers {tool.value!r}, which the suite does not declare "
                    f"(declared: {declared}){did_you_mean(tool.value, names)}",
                    "declare the tool under the suite's `tools:`, or fix the name",
                )
                continue
            if args is not None and not args.is_map:
                self.reader.wrong_type(args, "args", "a mapping of argument values", "{id: A-1}")
                continue
            text = self._fixture_text(content, entry)
            if text is None:
                continue
            out.append(ToolFixture(tool.value, text, args.plain() if args is not None else None))
        return tuple(out)

    def _fixture_text(self, node: Node | None, entry: Node) -> str | None:
        if node is None:
            self.add(entry.mark, "a tool_results entry needs `content:` (what the tool returns)")
            return None
        value = node.plain()
        if isinstance(value, str) and value.startswith(FILE_REF):
            return self._verbatim(node, self.folder)
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False)

    # -- golden answers --------------------------------------------------

    def assistant_turn(self, text: str, shown: str) -> Message | None:
        """A golden answer written as an assistant turn (JSON in either wire format, e.g.
        the call the model should have made), else None: the golden is plain text."""
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            return None
        if not isinstance(data, dict) or data.get("role") != Role.ASSISTANT.value:
            return None
        root, problems = load_text(text, shown)
        if problems or root is None:
            return None
        turns = self._message(root, self.folder)
        return turns[0] if len(turns) == 1 else None

    # -- files -----------------------------------------------------------

    def _document(
        self, node: Node, key: str, *, allow_lines: bool = False
    ) -> tuple[Node, Path] | None:
        """The value itself, or the JSON (or JSONL) document a `file://` value names, with
        the folder its own file:// references are relative to."""
        ref = node.value if node.is_scalar else None
        if not isinstance(ref, str):
            return node, self.folder
        if not ref.startswith(FILE_REF):
            self.add(node.mark, f"`{key}` must be a list or a file:// reference")
            return None
        text = self._verbatim(node, self.folder)
        if text is None:
            return None
        path = self.folder / ref[len(FILE_REF) :]
        shown = self.show(path)
        if allow_lines and path.suffix == ".jsonl":
            where = _lines_problem(text, shown)
            text = _as_array(text)
        else:
            where = _json_problem(text, shown)
        if where is not None:
            self.reader.problems.append(where)
            return None
        root, problems = load_text(text, shown)
        self.reader.problems.extend(problems)
        if root is None:
            return None
        return root, path.parent


def image_type(data: bytes) -> str | None:
    """The media type of an image's bytes (PNG, JPEG, GIF, WebP), None when it is none."""
    import puremagic

    try:
        media = puremagic.from_string(data, mime=True)
    except (puremagic.PureError, ValueError):
        return None
    return media if media in IMAGE_TYPES else None


def schema_problem(conversation: ConversationReader, node: Node, schema: Any, what: str) -> bool:
    """Whether `schema` is a JSON Schema; a problem at `node` when it is not."""
    if not isinstance(schema, dict):
        conversation.add(node.mark, f"{what} must be a JSON Schema object", '{"type": "object"}')
        return False
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        conversation.add(
            node.mark,
            f"{what} is not a JSON Schema: at {where}: {exc.message}",
            "fix the schema (see json-schema.org)",
        )
        return False
    return True


def _json_problem(text: str, shown: str) -> Any:
    from redline.errors import Problem

    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return Problem(shown, exc.lineno, exc.colno, f"not valid JSON: {exc.msg}", "fix the JSON")
    return None


def _lines_problem(text: str, shown: str) -> Any:
    """A JSON Lines file's first line that is not JSON."""
    from redline.errors import Problem

    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except json.JSONDecodeError as exc:
            return Problem(
                shown, number, exc.colno, f"not a JSON message: {exc.msg}", "one JSON object a line"
            )
    return None


def _as_array(text: str) -> str:
    """JSON Lines as one JSON array, each value on the line it was on (positions kept)."""
    lines = text.split("\n")
    used = [i for i, line in enumerate(lines) if line.strip()]
    if not used:
        return "[]"
    for i in used[:-1]:
        lines[i] += ","
    lines[used[0]] = "[" + lines[used[0]]
    lines[used[-1]] += "]"
    return "\n".join(lines)


def _anthropic_blocks(content: Node) -> bool:
    kinds = {getattr(c.get("type"), "value", None) for c in content.children()}
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


__all__ = ["IMAGE_TYPES", "ConversationReader", "image_type", "schema_problem"]
