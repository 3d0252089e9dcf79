"""One policy for what a repository path is and what may be read, sent, served or written.

Owns the path classifier (``paths``: source, test, docs, example, generated; and after
resolution secret, outside, git-internal), the secret detectors for file names (``names``) and
for content (``content``), the redactor (``redaction``), the read/write sandbox (``sandbox``)
and repository trust (``trust``). Every layer asks this package; none keeps its own list. It
sits on the ground floor: it imports nothing from ``engine`` but ``engine.errors``.
"""
