"""Data-quality expectations on the tables the dream writes, checked with Great Expectations 1.x.

GX is called directly (dagster-ge only supports GX < 1.0) on an ephemeral
context with a pandas datasource. It is imported lazily: importing it costs
about three seconds, which no other code path should pay.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from memvault.stage import Verdict
from memvault.store import Store
from memvault.store.queries.audit import rows_written_by
from memvault.store.queries.triples import triples_by_id_in_order

TRIPLE_STATUSES = ["active", "superseded", "merged", "expired", "invalidated", "archived", "held"]
#: The triple columns the suite reads (its columns and its row conditions' ``status``). Only
#: these are loaded and handed to pandas: the wide text columns (object, lineage, note) would
#: cost most of the memory and conversion time and are checked by nothing here.
TRIPLE_COLUMNS = (
    "id",
    "subject_id",
    "predicate",
    "valid_at",
    "invalid_at",
    "created_at",
    "expired_at",
    "status",
    "superseded_by",
    "confidence",
)


@dataclass
class QualityResult:
    success: bool
    evaluated: int
    failed: list[str] = field(default_factory=list)
    rows: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "evaluated": self.evaluated,
            "failed": self.failed,
            "rows": self.rows,
        }

    def verdict(self, scope: str) -> Verdict:
        """The suite as a check's verdict (``scope``: which rows it read)."""
        return Verdict(
            self.success,
            {
                "expectations": self.evaluated,
                "failed_expectations": len(self.failed),
                "failed": [{"expectation": f} for f in self.failed],
                "rows": self.rows,
                "scope": scope,
            },
        )


def _triple_expectations() -> list[Any]:
    import great_expectations.expectations as gxe
    from great_expectations.expectations.row_conditions import Column

    return [
        gxe.ExpectColumnValuesToBeUnique(column="id"),
        gxe.ExpectColumnValuesToNotBeNull(column="subject_id"),
        gxe.ExpectColumnValuesToNotBeNull(column="predicate"),
        gxe.ExpectColumnValuesToNotBeNull(column="created_at"),
        gxe.ExpectColumnValuesToBeInSet(column="status", value_set=TRIPLE_STATUSES),
        gxe.ExpectColumnValuesToBeBetween(column="confidence", min_value=0, max_value=1),
        # A retired fact keeps its dated annotation: superseded ⇒ invalid_at and expired_at set.
        gxe.ExpectColumnValuesToNotBeNull(
            column="invalid_at", row_condition=Column("status") == "superseded"
        ),
        gxe.ExpectColumnValuesToNotBeNull(
            column="expired_at", row_condition=Column("status") != "active"
        ),
        gxe.ExpectColumnValuesToNotBeNull(
            column="superseded_by", row_condition=Column("status") == "merged"
        ),
        # World time runs forward: a fact stops being true after it starts.
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="invalid_at",
            column_B="valid_at",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
        ),
    ]


def validate_frame(frame: pl.DataFrame, expectations: list[Any], name: str) -> QualityResult:
    """Validate ``frame`` against ``expectations``; offline (no usage statistics are sent)."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas(f"{name}_source")
    asset = source.add_dataframe_asset(name)
    batch_def = asset.add_batch_definition_whole_dataframe(f"{name}_batch")
    suite = context.suites.add(gx.ExpectationSuite(name=f"{name}_suite"))
    for expectation in expectations:
        suite.add_expectation(expectation)
    batch = batch_def.get_batch(batch_parameters={"dataframe": frame.to_pandas()})
    result = batch.validate(suite)
    failed = [_label(r.expectation_config) for r in result.results if not r.success]
    return QualityResult(bool(result.success), len(result.results), failed, frame.height)


def _label(config: Any) -> str:
    """``expect_…(column)``: which expectation failed, on which column."""
    if config is None:
        return "unknown expectation"
    column = config.kwargs.get("column") or config.kwargs.get("column_A")
    return f"{config.type}({column})"


def _columns_checked(expectations: list[Any]) -> set[str]:
    return {
        name
        for e in expectations
        for key in ("column", "column_A", "column_B")
        if isinstance(name := getattr(e, key, None), str)
    }


def validate_triples(store: Store, triple_ids: list[str] | None = None) -> QualityResult:
    """The triples table against the expectations above (an empty table passes).

    ``triple_ids``: only those facts (an incremental night's changed facts); none of them
    left, nothing to check (no validation runs)."""
    if triple_ids is not None and not triple_ids:
        return QualityResult(True, 0, [], 0)
    expectations = _triple_expectations()
    unread = _columns_checked(expectations) - set(TRIPLE_COLUMNS)
    if unread:  # a new expectation names a column the projection below would leave out
        raise ValueError(f"TRIPLE_COLUMNS lacks {sorted(unread)}")
    frame = triples_by_id_in_order(store, TRIPLE_COLUMNS, triple_ids)
    if frame.is_empty() and triple_ids is not None:
        return QualityResult(True, 0, [], 0)
    if frame.is_empty():
        schema = store.table_schema("triples")
        frame = pl.DataFrame(schema={c: schema[c] for c in TRIPLE_COLUMNS})
    return validate_frame(frame, expectations, "triples")


def _block_expectations() -> list[Any]:
    import great_expectations.expectations as gxe

    from memvault.lifecycle.tiering import TIERS

    return [
        gxe.ExpectColumnValuesToBeUnique(column="id"),
        gxe.ExpectColumnValuesToNotBeNull(column="text"),
        gxe.ExpectColumnValuesToNotBeNull(column="status"),
        gxe.ExpectColumnValuesToNotBeNull(column="created_at"),
        gxe.ExpectColumnValuesToBeInSet(column="tier", value_set=list(TIERS)),
        gxe.ExpectColumnValuesToBeBetween(column="access_count", min_value=0),
    ]


def _edge_expectations() -> list[Any]:
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeUnique(column="id"),
        gxe.ExpectColumnValuesToNotBeNull(column="source_id"),
        gxe.ExpectColumnValuesToNotBeNull(column="target_id"),
        gxe.ExpectColumnValuesToBeInSet(
            column="status", value_set=["connected", "pending", "archived"]
        ),
        gxe.ExpectColumnValuesToBeBetween(column="composite_weight", min_value=0),
    ]


def _profile_day_expectations() -> list[Any]:
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeUnique(column="id"),
        gxe.ExpectColumnValuesToNotBeNull(column="day"),
        gxe.ExpectColumnValuesToNotBeNull(column="known_at"),
        gxe.ExpectColumnValuesToNotBeNull(column="timezone"),
        gxe.ExpectColumnValuesToNotBeNull(column="top_entities"),
        gxe.ExpectColumnValuesToNotBeNull(column="activity"),
    ]


#: The suite of each table the pipeline writes besides triples: (expectations, columns read).
SUITES = {
    "blocks": (_block_expectations, ("id", "text", "status", "created_at", "tier", "access_count")),
    "edges": (_edge_expectations, ("id", "source_id", "target_id", "status", "composite_weight")),
    "profile_daily": (
        _profile_day_expectations,
        ("id", "day", "known_at", "timezone", "top_entities", "activity"),
    ),
}


def expectations_verdict(store: Store, table: str, *, changed_by: str | None = None) -> Verdict:
    """The verdict of ``table``'s suite (:func:`validate_table`), naming the rows it read."""
    scope = "rows this run changed" if changed_by else "every row"
    return validate_table(store, table, changed_by=changed_by).verdict(scope)


def validate_table(store: Store, table: str, *, changed_by: str | None = None) -> QualityResult:
    """``table`` (one of :data:`SUITES`, or triples) against its expectations; an empty table
    passes. Only the columns the suite reads are loaded.

    ``changed_by``: only the rows that run wrote (its audit rows say which), so a night that
    changed a few rows checks those, not the whole store; the rows it did not touch were
    checked by the run that wrote them. Nothing changed: nothing to check (no validation
    runs). A full pass (no ``changed_by``) checks every row."""
    if table == "triples":
        return validate_triples(store)
    build, columns = SUITES[table]
    frame = rows_written_by(store, table, columns, changed_by)
    if frame.is_empty() and changed_by is not None:
        return QualityResult(True, 0, [], 0)
    if frame.is_empty():
        schema = store.table_schema(table)
        frame = pl.DataFrame(schema={c: schema[c] for c in columns})
    return validate_frame(frame, build(), table)
