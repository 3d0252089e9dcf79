"""One module per command family; each exposes ``run(args) -> int``.

Modules are imported only when their command runs, so `semfora --help` stays fast.
"""
