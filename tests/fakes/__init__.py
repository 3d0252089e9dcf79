"""Protocol-faithful fake services (Anthropic Messages API, Ollama) for tests."""
