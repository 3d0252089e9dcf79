"""Layer 1: tree-sitter extraction, languages and queries, risk, graphs, overview, semantic diff."""
