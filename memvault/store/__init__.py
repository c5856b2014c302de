"""The store: schema, backends, the audited write path and undo."""

from memvault.ids import new_run_id
from memvault.store.audit import Mutation, UndoReport, undo_run
from memvault.store.store import Store

__all__ = ["Mutation", "Store", "UndoReport", "new_run_id", "undo_run"]
