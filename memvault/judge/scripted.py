"""A judge that plays back scripted replies, for tests.

Tests inject it where the pipeline expects a judge, script what the "LLM"
answers, and afterwards read :attr:`ScriptedJudge.received` to see exactly
which requests the pipeline asked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from memvault.judge.base import JudgeStats, SequentialJudge
from memvault.judge.tasks import JudgeTask

RequestT = TypeVar("RequestT", bound=BaseModel)
ReplyT = TypeVar("ReplyT", bound=BaseModel)

#: A scripted reply: the reply model, a dict validated into it, or an exception to raise.
Reply = BaseModel | Mapping[str, Any] | BaseException
#: Per task name: replies played in order, or a function of the request.
Script = Mapping[str, Sequence[Reply] | Callable[[Any], Reply]]


class ScriptExhaustedError(RuntimeError):
    """The code under test asked more than the script answers."""


@dataclass(frozen=True)
class ScriptedCall:
    """One request the scripted judge received."""

    task: str
    request: BaseModel
    escalate: bool


class ScriptedJudge(SequentialJudge):
    """A :class:`~memvault.judge.base.Judge` answering from a script; counts as LLM calls."""

    kind = "scripted"

    def __init__(self, script: Script, *, can_escalate: bool = True) -> None:
        """``can_escalate``: whether the scripted judge stands for one with an escalation model."""
        self.can_escalate = can_escalate
        self._script = {
            name: entry if callable(entry) else list(entry) for name, entry in script.items()
        }
        self._positions = dict.fromkeys(self._script, 0)
        self.received: list[ScriptedCall] = []
        self.stats = JudgeStats()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ScriptedJudge(tasks={sorted(self._script)})"

    def requests_for(self, task_name: str) -> list[BaseModel]:
        """The requests received for one task, in order."""
        return [call.request for call in self.received if call.task == task_name]

    def ask(
        self, task: JudgeTask[RequestT, ReplyT], request: RequestT, *, escalate: bool = False
    ) -> ReplyT:
        with self._lock:
            self.received.append(ScriptedCall(task.name, request, escalate))
            entry = self._script.get(task.name)
            if entry is None:
                raise ScriptExhaustedError(
                    f"the script has no replies for task {task.name!r} "
                    f"(scripted: {sorted(self._script)})"
                )
            if callable(entry):
                reply = entry(request)
            else:
                position = self._positions[task.name]
                if position >= len(entry):
                    raise ScriptExhaustedError(
                        f"the script for task {task.name!r} ran out after {len(entry)} replies"
                    )
                self._positions[task.name] = position + 1
                reply = entry[position]
        self.stats.add(calls=1, escalations=int(escalate))
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, task.reply_model):
            return reply
        if isinstance(reply, BaseModel):
            reply = reply.model_dump()
        return task.reply_model.model_validate(reply)
