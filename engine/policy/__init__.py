"""One policy for what a repository path is and what may be read, sent, served or written.

Owns the path classifier (source, test, docs, example, generated, ...) and, as it grows, the
secret detectors, the redactor and the read sandbox. Every layer asks this package; none keeps
its own list. It sits on the ground floor: it imports nothing else from ``engine``.
"""
