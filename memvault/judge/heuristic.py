"""The offline judge: every task's rule-based answer, deterministic, no network.

It is the default when no LLM endpoint is configured. Its answers come from
each task's ``heuristic``, which gives honest low confidence on anything it
cannot decide, so such cases go to review instead of being guessed.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from memvault.judge.base import JudgeStats, SequentialJudge
from memvault.judge.tasks import JudgeTask

RequestT = TypeVar("RequestT", bound=BaseModel)
ReplyT = TypeVar("ReplyT", bound=BaseModel)


class HeuristicJudge(SequentialJudge):
    """A :class:`~memvault.judge.base.Judge` that makes no LLM calls.

    Answers count as ``heuristic_answers``, never as ``calls``; ``escalate`` is
    accepted and ignored (there is no stronger rule set to escalate to).
    """

    kind = "heuristic"
    #: Rules have no stronger version to ask: the heuristic judge never escalates.
    can_escalate = False

    def __init__(self) -> None:
        self.stats = JudgeStats()

    def __repr__(self) -> str:
        return "HeuristicJudge()"

    def ask(
        self, task: JudgeTask[RequestT, ReplyT], request: RequestT, *, escalate: bool = False
    ) -> ReplyT:
        reply = task.heuristic(request)
        self.stats.add(heuristic_answers=1)
        return reply
