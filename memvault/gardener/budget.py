"""GD-S2: the per-run budget of mutations and judgments, and the stop it causes when spent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_MUTATIONS = 25
DEFAULT_MAX_JUDGMENTS = 50


class BudgetSpent(Exception):
    """Raised inside a phase when the next unit of work does not fit; the ceremony records
    ``cursor`` (where the phase stopped) as the resume point."""

    def __init__(self, kind: str, cursor: dict[str, Any] | None = None) -> None:
        self.kind = kind
        self.cursor = dict(cursor or {})
        super().__init__(f"{kind} budget spent")


@dataclass
class Budget:
    """Counters against limits; ``need_*`` raises :class:`BudgetSpent` before the limit is crossed."""

    max_mutations: int = DEFAULT_MAX_MUTATIONS
    max_judgments: int = DEFAULT_MAX_JUDGMENTS
    mutations: int = 0
    judgments: int = 0

    def need_mutations(self, n: int = 1, cursor: dict[str, Any] | None = None) -> None:
        """Make sure ``n`` more mutations fit (a split reserves all of its writes at once)."""
        if self.mutations + n > self.max_mutations:
            raise BudgetSpent("mutation", cursor)

    def need_judgments(self, n: int = 1, cursor: dict[str, Any] | None = None) -> None:
        if self.judgments + n > self.max_judgments:
            raise BudgetSpent("judgment", cursor)

    def spend_mutation(self, n: int = 1) -> None:
        self.mutations += n

    def spend_judgment(self, n: int = 1) -> None:
        self.judgments += n

    @property
    def within(self) -> bool:
        return self.mutations <= self.max_mutations and self.judgments <= self.max_judgments

    def as_dict(self) -> dict[str, int]:
        return {
            "max_mutations": self.max_mutations,
            "max_judgments": self.max_judgments,
            "mutations": self.mutations,
            "judgments": self.judgments,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Budget:
        return cls(**{k: int(v) for k, v in data.items() if k in cls.__dataclass_fields__})
