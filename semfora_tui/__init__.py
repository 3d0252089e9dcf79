"""semfora's user interfaces: the Textual app and the command-line entry points.

This is the only package that imports ``textual``, and it does so lazily so that
headless commands (`semfora index`, `semfora ci`, ...) never pay for it.
"""
