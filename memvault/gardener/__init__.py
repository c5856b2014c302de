"""The memory gardener (design.md): a storage-agnostic, budgeted, idempotent nightly ceremony.

It surveys what a store can do (:mod:`memvault.gardener.capabilities`), tends it
through an adapter (:mod:`memvault.gardener.adapter`) within a budget, proposes
what is destructive or uncertain, audits every change and always writes the
report (:mod:`memvault.gardener.report`). The entry point is
:func:`memvault.gardener.run.run_garden`.
"""
