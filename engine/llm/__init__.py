"""Model clients: reasoners (Anthropic, LiteLLM), the Ollama summarizer, tokens and cost.

Public entry points: ``engine.llm.select.make_reasoner``, ``engine.llm.base`` (data and
errors), ``engine.llm.tokens.TokenCounter``, ``engine.llm.summarizer.Summarizer`` and
``engine.services.ollama.OllamaClient``. Heavy SDKs are imported inside functions only.
"""
