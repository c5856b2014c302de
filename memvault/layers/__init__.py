"""The layers: what the owner prefers and what the owner can do, kept beside the memories.

* :mod:`~memvault.layers.attitudes` — preferences, one version chain per topic, their
  confidence fading without new evidence until it no longer binds.
* :mod:`~memvault.layers.skills` — skill levels from skill uses (heard of → have done →
  can teach), both ways as experience halves unused.

They are imported from here (``from memvault.layers import attitudes, skills``): one
name per track, the same as the assets', the resource's and the command line's.
"""
