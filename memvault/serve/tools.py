"""memvault's four tools as an agent meets them: what each is for, returns and refuses.

The descriptions are written for the model that reads them: when to call the tool, what
comes back and what its fields mean, and the limits. Each tool's arguments are checked
strictly against its schema (:mod:`memvault.serve.arguments`) before anything runs; its
answer is kept within the server's caps (:mod:`memvault.serve.shaping`). A refusal is an
MCP tool error (``isError``) of one line in the tool's terms, and nothing was written.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from memvault.errors import MemvaultError
from memvault.serve import arguments
from memvault.serve.shaping import Limits, compact, shape_asof, shape_recall

if TYPE_CHECKING:
    from mcp.server.mcpserver.context import Context

#: How the server introduces itself to the agent (the MCP ``instructions``).
INSTRUCTIONS = """\
memvault is the owner's long-term memory: what they said, did, decided and prefer, across
past conversations. Call `recall` with the question in plain words before answering anything
that depends on it; answer from a memory it marks older only if the question is about the
past, and when it says `weak_match`, say you do not remember instead of guessing. Keep what is worth
remembering with `remember` (one self-contained statement). Rate a recall you relied on with
`feedback`. For what held at a given date (employer, city, role, tools), use `asof`."""

RECALL = """\
Search the owner's long-term memory and return the memories that best answer a question.

Use it before answering anything that depends on what the owner said, did, decided or
prefers (people, projects, tools, places, dates), with the question in plain words; call it
again with other words if the first answer misses.

Returns JSON:
- results: the best memories first, each with block_id, text, score, created_at (when it was
  said), session_id, kind and tier. kind 'insight' is memvault's own reading of several
  memories (it cites them), not something the owner said. tier 'cold' or 'frozen': the text
  is a digest of the original. When a later memory changed what the question asks (the
  editor, the city, the employer, the job), the older memory carries older: true and
  superseded_by (the newer memory's block_id) and ranks below it: answer from the newer one.
  A memory whose recorded facts stopped holding carries superseded_since. A text longer than {hit_chars:,} characters is cut, marked by
  text_cut: true and text_chars (its full length).
- facts: current facts (subject_id, predicate, object, valid_at) about the people and things
  the question names.
- weak_match: true when no memory matches the question well (none shares enough of its
  words or meaning); then only the nearest few are returned and they are probably not an
  answer: say you do not remember rather than guess from them.
- recall_id: to rate this answer with feedback.
- omitted: how many lower-ranked memories were left out to keep the answer within
  {result_chars:,} characters.

Limits: query up to {query_chars:,} characters; limit 1-{max_limit} (default {limit}).
Every recall is logged in the owner's memory (with the session_id given)."""

REMEMBER = """\
Keep one memory for later recall: a fact, decision, preference, plan or event worth
knowing in a future conversation.

Write it as one self-contained statement that names who and what it is about (recall finds
it by its words and meaning, without this conversation around it): 'Ada switched from Neovim
to VS Code in November for its debugger', not 'she switched'. Say when it happened with
occurred_at if not now. Never store passwords, keys or other secrets.

Returns JSON: block_id (the memory's id), written (false when the same text was kept
before: it is the same memory, block_id the first one's), embedded (it has its vector: found
by meaning at once), parts (how many memories a text past {block_chars:,} characters was
split into) and run_id. The next recall finds it.

Limits: text up to {text_chars:,} characters; occurred_at never in the future."""

FEEDBACK = """\
Rate a recall you used, by its recall_id, so future recalls rank better.

verdict 'correct': its memories answered the question; 'incorrect': they did not or were
wrong; 'ambiguous': partly. Or '+' / '-' to rank that recall's memories higher / lower in
future recalls (only one of them with block_id). Add a short note saying why.

Returns JSON: verdict, recall_id, run_id, feedback_ids and, for + / -, feedback_scores (each
memory's summed rating)."""

ASOF = """\
What was true about one person or thing at a point in time, from the facts memvault keeps
(employer, home city, role, tools used, projects, whom they know, ...) with the time each
held. Use it for 'where did Ada work in March' or 'what does Ada use now'; use recall for
anything else.

subject: a name as you would say it ('Ada', 'ada lovelace', an alias) or an entity id.
at: the time asked about (default now). predicate: only facts of that kind.

Returns JSON: subject (the entity's name) and subject_id; facts, each with predicate,
object, valid_at (since when it held), invalid_at (until when, if it ended), known_since
and triple_id; predicates: the kinds of facts known for this subject, with counts. At most
{max_facts} facts are returned: more_facts says how many more there are (ask again with a
predicate). An unknown predicate is refused with the list of those known."""


def descriptions(limits: Limits) -> dict[str, str]:
    """Each tool's description, with this server's limits filled in."""
    from memvault.normalize import MAX_TEXT_CHARS
    from memvault.recall.recaller import MAX_QUERY_CHARS

    values = {
        "hit_chars": limits.hit_chars,
        "result_chars": limits.result_chars,
        "max_facts": limits.max_facts,
        "query_chars": MAX_QUERY_CHARS,
        "max_limit": arguments.MAX_LIMIT,
        "limit": arguments.DEFAULT_LIMIT,
        "text_chars": arguments.MAX_REMEMBER_CHARS,
        "block_chars": MAX_TEXT_CHARS,
    }
    texts = {"recall": RECALL, "remember": REMEMBER, "feedback": FEEDBACK, "asof": ASOF}
    return {name: text.format(**values) for name, text in texts.items()}


def _hints(title: str, *, read_only: bool = False) -> ToolAnnotations:
    """Nothing a tool does destroys or leaves this machine; recall writes only its own log."""
    if read_only:
        return ToolAnnotations(title=title, read_only_hint=True, open_world_hint=False)
    return ToolAnnotations(
        title=title,
        read_only_hint=False,
        destructive_hint=False,
        idempotent_hint=False,
        open_world_hint=False,
    )


ANNOTATIONS = {
    "recall": _hints("Recall from memory"),
    "remember": _hints("Remember"),
    "feedback": _hints("Rate a recall"),
    "asof": _hints("Facts at a date", read_only=True),
}

#: What a tool's answer is: a JSON object (its fields are in the description).
OUTPUT_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": True}

_PAREN_CLI = re.compile(r"\s*\([^()]*`memvault [^()]*\)")
_CLAUSE_CLI = re.compile(r"[;:,]\s*`memvault [^;]*")
_SPACE = re.compile(r"\s+")


def in_tool_words(tool: str, message: str) -> str:
    """A refusal as the agent should read it: one line, about this tool and its arguments,
    with no shell commands or option names in it."""
    text = _PAREN_CLI.sub("", message)
    text = _CLAUSE_CLI.sub("", text)
    text = text.replace("--block", "block_id")
    text = _SPACE.sub(" ", text).strip()
    if not re.match(rf"{re.escape(tool)}\b", text):
        text = f"{tool}: {text}"
    return text


def refusal(tool: str, message: str) -> CallToolResult:
    """An MCP tool error of one line (the caller can read it and try again)."""
    return CallToolResult(
        content=[TextContent(type="text", text=in_tool_words(tool, message))], is_error=True
    )


def answer(result: dict[str, Any]) -> CallToolResult:
    """A tool's answer: the JSON object, and the same as compact text for older clients."""
    return CallToolResult(
        content=[TextContent(type="text", text=compact(result))], structured_content=result
    )


class StrictTool(Tool):
    """A tool whose arguments are checked by :func:`arguments.check` (no conversion, nothing
    unknown taken) and whose refusals are one-line tool errors."""

    async def run(
        self,
        arguments: dict[str, Any],
        context: Context[Any, Any],
        convert_result: bool = False,
    ) -> Any:
        try:
            checked = _check(self.name, arguments)
            result = await anyio.to_thread.run_sync(partial(self.fn, checked))
        except MemvaultError as exc:
            return refusal(self.name, str(exc))
        return answer(result)


def _check(tool: str, given: Any) -> dict[str, Any]:
    if not isinstance(given, dict):
        raise arguments.ArgumentError(f"{tool}: the arguments must be a JSON object")
    return arguments.check(tool, given)


Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def build_tools(call: Call, limits: Limits | None = None) -> list[Tool]:
    """The four tools, answering through ``call(tool, arguments)`` (which raises
    :class:`MemvaultError` to refuse), their answers shaped to ``limits``."""
    limits = limits or Limits.from_env()
    shapers: dict[str, Callable[[dict[str, Any], Limits], dict[str, Any]]] = {
        "recall": shape_recall,
        "asof": shape_asof,
    }
    texts = descriptions(limits)
    tools: list[Tool] = []
    for name in arguments.ARGUMENTS:

        def run(checked: dict[str, Any], name: str = name) -> dict[str, Any]:
            result = call(name, checked)
            shaper = shapers.get(name)
            return shaper(result, limits) if shaper else result

        tools.append(
            StrictTool(
                fn=run,
                name=name,
                title=ANNOTATIONS[name].title,
                description=texts[name],
                parameters=arguments.input_schema(name),
                fn_metadata=FuncMetadata(arg_model=ArgModelBase, output_schema=OUTPUT_SCHEMA),
                is_async=False,
                annotations=ANNOTATIONS[name],
            )
        )
    return tools
