"""Per-repository storage: cache-directory layout, SQLite store, manifest, migrations."""
