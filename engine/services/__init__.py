"""Clients of local services the engine talks to over HTTP (Ollama), below both ``llm`` and ``index``."""
