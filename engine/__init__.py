"""semfora's engine: everything below the UI, usable headless.

Built in floors, every import pointing down: the order is the import-linter contract in
pyproject.toml (``lint-imports``) and docs/architecture.md lists it. This package must never
import ``textual`` or a face (``semfora_tui``); the contract and a test enforce it. Heavy clients
(anthropic, chromadb, litellm, onnxruntime) are imported inside the functions
that need them so that ``import engine`` stays cheap.
"""

__version__ = "0.1.0"
