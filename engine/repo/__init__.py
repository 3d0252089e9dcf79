"""The repository itself: its root, identity and cache paths (``layout``) and every git call (``git``).

The ground floor: imports nothing of the engine but ``engine.errors``.
"""
