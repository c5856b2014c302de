"""The layers: what the owner prefers and what the owner can do, kept beside the memories.

* :mod:`~memvault.layers.attitudes` — preferences, one version chain per topic, their
  confidence fading without new evidence until it no longer binds.
* :mod:`~memvault.layers.skills` — skill levels from skill uses (heard of → have done →
  can teach), both ways as experience halves unused.

``memvault.attitudes`` and ``memvault.skills`` name the same modules in the Python API.
"""
