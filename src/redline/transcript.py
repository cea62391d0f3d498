"""A sample's answer and a case's conversation as a person reads them, in plain text.

An answer is more than its text once a model calls tools: the calls (name and arguments),
and for a tool loop every step with the fixture answers redline sent back. The app's
Step 2, `redline show`, the HTML report and JUnit's system-out all print the same
rendering from here, and the diff to a golden answer compares it, so a golden answer that
is a tool call reads `tool call issue_refund {...}` wherever it appears.

Nothing here escapes: every caller shows the result through its own escaping
(`textsafe.escape_output`, HTML escaping), exactly as it shows a plain output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from redline.vocabulary.messages import LoopEnd, Message, Role, Step, ToolCall, loop_end
from redline.vocabulary.records import SampleRecord

_LOOP_ENDS = {
    LoopEnd.ANSWERED: "the model answered",
    LoopEnd.UNANSWERED: "the model called a tool the case has no answer for",
    LoopEnd.MAX_STEPS: "the model was still calling tools at the case's max_steps",
}


def pretty_arguments(call: ToolCall) -> str:
    """The call's arguments as indented JSON; exactly as received when they are not JSON."""
    args, problem = call.parsed()
    if problem is not None:
        return f"{call.arguments}\n({problem})"
    return json.dumps(args, indent=2, ensure_ascii=False)


def call_text(call: ToolCall, *, with_id: bool = True) -> str:
    """`tool call NAME (id ID)` and the pretty-printed arguments below it."""
    ident = f" (id {call.id})" if call.id and with_id else ""
    return f"tool call {call.name}{ident}\n{pretty_arguments(call)}"


def answer_text(output: str, tool_calls: Sequence[ToolCall], *, with_ids: bool = True) -> str:
    """An answer's text followed by its tool calls. Without tool calls this is the output
    itself, character for character; `with_ids=False` leaves out the call ids a provider
    makes up afresh each time (what a golden answer is compared with)."""
    if not tool_calls:
        return output
    calls = "\n".join(call_text(c, with_id=with_ids) for c in tool_calls)
    return f"{output}\n{calls}" if output else calls


def sample_answer(sample: SampleRecord) -> str:
    """The sample's (last) answer, its text and the calls it made, as a golden answer keeps
    it and the diff to a golden answer compares it (call ids left out)."""
    return answer_text(sample.output, sample.tool_calls, with_ids=False)


def is_plain(sample: SampleRecord) -> bool:
    """A text answer with no tool call and no loop: shown exactly as stored."""
    return not sample.tool_calls and not sample.steps


@dataclass(frozen=True)
class Entry:
    """One block of a transcript: who said it and what."""

    #: `assistant`, `tool result`, `user`, `system`, `tool` or `loop`.
    speaker: str
    text: str


def _step_entries(number: int, step: Step, total: int) -> list[Entry]:
    head = f"assistant, step {number} of {total}"
    if step.finish_reason is not None:
        head += f" (finish {step.finish_reason.value})"
    entries = [Entry(head, answer_text(step.output, step.tool_calls))]
    if step.error is not None:
        entries.append(Entry("error", step.error))
    entries += [
        Entry(f"tool result {r.name} (answers {r.call_id})", r.content) for r in step.tool_results
    ]
    return entries


def sample_transcript(sample: SampleRecord) -> list[Entry]:
    """Every step of the sample's tool loop and how it ended; its one answer otherwise."""
    if not sample.steps:
        return [Entry("assistant", answer_text(sample.output, sample.tool_calls))]
    entries: list[Entry] = []
    for number, step in enumerate(sample.steps, start=1):
        entries += _step_entries(number, step, len(sample.steps))
    end = loop_end(sample.steps)
    if end is not None:
        entries.append(
            Entry("loop", f"ended after {len(sample.steps)} request(s): {_LOOP_ENDS[end]}")
        )
    return entries


def message_entry(message: Message) -> Entry:
    """One turn of a conversation that was sent, images named by their file and hash."""
    speaker = message.role.value
    if message.name:
        speaker += f" {message.name}"
    if message.role is Role.TOOL and message.tool_call_id:
        speaker += f" (answers {message.tool_call_id})"
    parts = [message.text] if message.text else []
    parts += [f"[image {i.source or i.media_type}, sha256 {i.sha256[:12]}]" for i in message.images]
    return Entry(speaker, answer_text("\n".join(parts), message.tool_calls))


def is_conversation(messages: Sequence[Message]) -> bool:
    """More than one system prompt and one user turn: worth reading beside the answer."""
    roles = [m.role for m in messages if m.role is not Role.SYSTEM]
    return len(roles) > 1 or any(m.tool_calls or m.images for m in messages)


def conversation_entries(messages: Sequence[Message]) -> list[Entry]:
    return [message_entry(m) for m in messages]


def entries_text(entries: Sequence[Entry]) -> str:
    """Entries as plain text: a `── speaker ──` rule above each block."""
    return "\n".join(f"── {e.speaker} ──\n{e.text}" for e in entries)


def transcript_text(sample: SampleRecord) -> str:
    """The sample as plain text: its output as stored when it is a plain text answer."""
    return sample.output if is_plain(sample) else entries_text(sample_transcript(sample))


def tool_names(sample: SampleRecord) -> list[str]:
    """Every tool the sample called, over all steps, in order."""
    calls = [c for s in sample.steps for c in s.tool_calls] if sample.steps else sample.tool_calls
    return [c.name for c in calls]


__all__ = [
    "Entry",
    "answer_text",
    "call_text",
    "conversation_entries",
    "entries_text",
    "is_conversation",
    "is_plain",
    "message_entry",
    "pretty_arguments",
    "sample_answer",
    "sample_transcript",
    "tool_names",
    "transcript_text",
]
