"""semfora's engine: everything below the UI, usable headless.

This package must never import ``textual``; a test enforces it. Heavy clients
(anthropic, chromadb, litellm, onnxruntime) are imported inside the functions
that need them so that ``import engine`` stays cheap.
"""

__version__ = "0.1.0"
