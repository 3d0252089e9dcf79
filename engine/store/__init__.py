"""index.db and cache.db: opening, schema, discovery, change detection, the writer lock, symbol
rows and search, the overview, the result cache. Below ``engine.index`` and ``engine.llm``, which
write and read through it; never imports them. The cache directory's layout is ``engine.repo``."""
