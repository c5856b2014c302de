"""The data layer: one module per family of shared tables, each query a function named for
what it answers.

Code outside ``memvault/store`` asks these modules (or the :class:`~memvault.store.Store`
itself: ``counts``, the run bookkeeping, the audited write path) instead of writing SQL against
the tables; ``tests/unit/test_data_layer.py`` keeps the wiring and the command line free of
SQL. A query too long to read well in Python lives in ``sql/queries/<name>.sql`` and is run by
``Store.query``.
"""
