"""Pure code understanding: tree-sitter extraction, languages and queries, risk, graphs, the
semantic diff. Never opens index.db (the store is above it; the diff takes the call graph as a
parameter)."""
