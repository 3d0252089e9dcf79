"""Model B: Python decides what context a task needs; the model only reasons over it.

Owns intent, anchors, retrieval and ranking, the context budget, session memory,
prompt assembly, the edit-protocol round trip and the run log. It must not import
textual, and it never lets a model choose what to fetch beyond a bounded ``NEED:``.
"""
