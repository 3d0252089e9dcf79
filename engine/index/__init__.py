"""Retrieval: chunking, FTS5, vectors (ChromaDB), embeddings, hybrid ranking, caches, metrics."""
