"""Building and searching the index: the indexer, chunking, FTS5, vectors (ChromaDB), embeddings,
hybrid ranking and its fusion, metrics. Beside ``engine.llm`` and ``engine.edits`` (never imports
them); talks to Ollama through ``engine.services``."""
