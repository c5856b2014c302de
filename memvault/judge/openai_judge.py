"""A judge on any OpenAI-compatible chat endpoint (OpenAI, Azure, vLLM, Ollama, llama.cpp).

Structured output goes through a forced tool call: it works on all of those
servers, while ``response_format={"type": "json_schema"}`` gets HTTP 500 from
the llama.cpp server. A server that rejects tools (HTTP 400 or 422) is asked again
with ``response_format={"type": "json_object"}`` and the schema in the system
message, and that model stays on the fallback for the judge's lifetime.

Transient failures (connection errors, timeouts, 429, 5xx) are retried with
exponential backoff; a reply outside the schema is asked again with the
validation problem named, a bounded number of times; everything else ends in
one :class:`~memvault.errors.JudgeError` with a one-line cause.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import openai
from openai import OpenAI, omit
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam
from pydantic import BaseModel, ValidationError
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from memvault.errors import JudgeError
from memvault.judge.base import JudgeCache, JudgeStats, cache_key
from memvault.judge.tasks import JudgeTask

RequestT = TypeVar("RequestT", bound=BaseModel)
ReplyT = TypeVar("ReplyT", bound=BaseModel)

#: A server's "I cannot take this request" (400; 422 from FastAPI-based servers).
_REJECTED = (openai.BadRequestError, openai.UnprocessableEntityError)
_CODE_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def _transient(exc: BaseException) -> bool:
    """Worth retrying: the server may answer next time."""
    if isinstance(exc, openai.APIConnectionError | openai.RateLimitError):
        return True  # APITimeoutError is an APIConnectionError
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _one_line(exc: BaseException) -> str:
    """An exception as one short line."""
    if isinstance(exc, ValidationError):
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors(include_url=False, include_input=False)[:3]
        ]
        more = f" (+{exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
        return "; ".join(problems) + more
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _strip_code_fence(text: str) -> str:
    match = _CODE_FENCE.match(text)
    return match.group(1) if match else text


class OpenAIJudge:
    """A :class:`~memvault.judge.base.Judge` on an OpenAI-compatible endpoint."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        escalation_model: str | None = None,
        max_concurrency: int = 4,
        timeout: float = 60,
        max_retries: int = 4,
        temperature: float = 0.0,
        cache: JudgeCache | None = None,
        *,
        max_invalid_replies: int = 2,
        backoff: float = 0.5,
        max_tokens: int | None = None,
    ) -> None:
        """``max_invalid_replies`` re-asks after a schema-invalid reply; ``backoff`` is
        the first retry wait in seconds (doubling, at most 30 s); ``max_tokens`` caps
        each reply (a small model can otherwise ramble until its context is full)."""
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.base_url = base_url
        self.model = model
        self.escalation_model = escalation_model
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.temperature = temperature
        self.cache = cache
        self.max_invalid_replies = max_invalid_replies
        self.backoff = backoff
        self.max_tokens = max_tokens
        self.kind = f"openai:{model}"
        self.stats = JudgeStats()
        self._client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0)
        self._no_tools: set[str] = set()  # models whose server rejected tools
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIJudge({self.base_url!r}, model={self.model!r})"

    @property
    def can_escalate(self) -> bool:
        """Only a configured, different escalation model is an escalation."""
        return bool(self.escalation_model) and self.escalation_model != self.model

    def ask(
        self, task: JudgeTask[RequestT, ReplyT], request: RequestT, *, escalate: bool = False
    ) -> ReplyT:
        escalate = escalate and self.can_escalate
        model = (self.escalation_model or self.model) if escalate else self.model
        if escalate:
            self.stats.add(escalations=1)
        messages = task.render(request)
        key = cache_key(model, messages, task.schema, task.name)
        if self.cache is not None and (cached := self.cache.get(key)) is not None:
            try:
                reply = task.reply_model.model_validate_json(cached)
            except ValidationError:
                pass  # a stale entry: ask again and overwrite it
            else:
                self.stats.add(cache_hits=1)
                return reply
        try:
            reply, prompt_tokens, completion_tokens = self._ask_valid(task, model, messages)
        except JudgeError:
            self.stats.add(errors=1)
            raise
        if self.cache is not None:
            self.cache.put(
                key, task.name, model, reply.model_dump_json(), prompt_tokens, completion_tokens
            )
        return reply

    def ask_many(
        self,
        task: JudgeTask[RequestT, ReplyT],
        requests: Sequence[RequestT],
        *,
        escalate: bool = False,
    ) -> list[ReplyT]:
        if len(requests) <= 1:
            return [self.ask(task, r, escalate=escalate) for r in requests]
        workers = min(self.max_concurrency, len(requests))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
            return list(pool.map(lambda r: self.ask(task, r, escalate=escalate), requests))

    # --- one question, until the reply fits the schema ------------------------------------

    def _ask_valid(
        self, task: JudgeTask[Any, ReplyT], model: str, messages: list[dict[str, str]]
    ) -> tuple[ReplyT, int, int]:
        """The reply and the tokens all attempts cost."""
        prompt_tokens = completion_tokens = 0
        conversation = list(messages)
        problem = ""
        for _ in range(1 + self.max_invalid_replies):
            completion = self._complete(task, model, conversation)
            usage = completion.usage
            if usage is not None:
                prompt_tokens += usage.prompt_tokens
                completion_tokens += usage.completion_tokens
                self.stats.add(
                    prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens
                )
            try:
                return (
                    task.reply_model.model_validate_json(self._reply_text(completion)),
                    prompt_tokens,
                    completion_tokens,
                )
            except (ValidationError, ValueError, TypeError, AttributeError) as exc:
                problem = _one_line(exc)
            conversation = [
                *messages,
                {
                    "role": "user",
                    "content": f"Your previous reply did not match the {task.name} schema "
                    f"({problem}). Answer again, following the schema exactly.",
                },
            ]
        raise JudgeError(
            f"{task.name}: {model} at {self.base_url} answered outside the reply schema "
            f"{1 + self.max_invalid_replies} times; last problem: {problem}"
        )

    @staticmethod
    def _reply_text(completion: ChatCompletion) -> str:
        """The reply's JSON text: the forced tool call's arguments, else the message content."""
        if not completion.choices:
            raise ValueError("the completion has no choices")
        message = completion.choices[0].message
        for call in message.tool_calls or ():
            if call.type == "function":
                return call.function.arguments
        if message.content:
            return _strip_code_fence(message.content)
        raise ValueError("the reply has neither a tool call nor content")

    # --- one HTTP exchange, with retries ------------------------------------------------

    def _complete(
        self, task: JudgeTask[Any, Any], model: str, messages: list[dict[str, str]]
    ) -> ChatCompletion:
        with self._lock:
            use_tools = model not in self._no_tools
        if use_tools:
            tool = {"name": task.name, "description": task.description, "parameters": task.schema}
            try:
                return self._send(
                    model,
                    messages,
                    tools=[{"type": "function", "function": tool}],
                    tool_choice={"type": "function", "function": {"name": task.name}},
                )
            except _REJECTED:
                with self._lock:
                    self._no_tools.add(model)
        try:
            return self._send(
                model,
                self._with_schema(task, messages),
                response_format={"type": "json_object"},
            )
        except _REJECTED as exc:
            raise JudgeError(
                f"{model} at {self.base_url} rejected the request: {_one_line(exc)}"
            ) from exc

    @staticmethod
    def _with_schema(
        task: JudgeTask[Any, Any], messages: list[dict[str, str]]
    ) -> list[dict[str, str]]:
        """Messages whose system message ends with the reply schema (json_object mode)."""
        schema = json.dumps(task.schema, ensure_ascii=False)
        rule = (
            "\n\nReply with exactly one JSON object and nothing else. "
            f"It must match this JSON schema:\n{schema}"
        )
        first, *rest = messages
        return [{**first, "content": first["content"] + rule}, *rest]

    def _send(
        self,
        model: str,
        messages: list[dict[str, str]],
        *,
        tools: Any = omit,
        tool_choice: Any = omit,
        response_format: Any = omit,
    ) -> ChatCompletion:
        retrying = Retrying(
            retry=retry_if_exception(_transient),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_exponential(multiplier=self.backoff, max=30),
            reraise=False,
        )
        try:
            for attempt in retrying:
                with attempt:
                    completion = self._client.chat.completions.create(
                        model=model,
                        messages=cast("list[ChatCompletionMessageParam]", messages),
                        temperature=self.temperature,
                        max_tokens=self.max_tokens or omit,
                        tools=tools,
                        tool_choice=tool_choice,
                        response_format=response_format,
                    )
            self.stats.add(calls=1)
            return completion
        except RetryError as exc:
            cause = exc.last_attempt.exception() or exc
            raise JudgeError(
                f"{model} at {self.base_url} failed {self.max_retries + 1} times: "
                f"{_one_line(cause)}"
            ) from cause
        except _REJECTED:
            raise  # the caller decides whether it means "no tools here"
        except openai.OpenAIError as exc:
            raise JudgeError(f"{model} at {self.base_url}: {_one_line(exc)}") from exc
        except (ValueError, TypeError, AttributeError) as exc:  # e.g. a 200 that is not JSON
            raise JudgeError(
                f"{model} at {self.base_url} answered with something that is not an OpenAI "
                f"reply: {_one_line(exc)}"
            ) from exc
