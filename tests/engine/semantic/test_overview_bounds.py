"""The repository overview: bounded to 2,500 tokens for any repository, and computed by aggregation."""

from __future__ import annotations

import json
import tracemalloc

import toon_format
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout
from engine.store.db import open_index
from engine.store.overview import MAX_MODULES, _module_of, build_overview
from engine.store.schema import create_secondary_indexes, drop_secondary_indexes

SYMBOLS_PER_FILE = 5
# Holding 100k symbols as Python objects costs far more than this; aggregates cost far less.
PEAK_BYTES_LIMIT = 6 * 1024 * 1024


def _fill_synthetic_store(layout: RepoLayout, n_files: int, dir_name_len: int = 6) -> None:
    """Insert ``n_files`` files (5 symbols each, some edges) straight into index.db, like an indexer would."""
    conn = open_index(layout)
    files, symbols, edges = [], [], []
    sid = 0
    for i in range(n_files):
        top, mid = i % 60, (i // 60) % 30
        module = f"{'d' * dir_name_len}{top}/sub{mid}"
        path = f"{module}/file_{i}.py"
        files.append((path, "python", module, 100, 1, f"sha{i}", 20, 0, 0.0, i + 1))
        for k in range(SYMBOLS_PER_FILE):
            sid += 1
            name = f"func_{i}_{k}"
            risk = ("low", "low", "medium", "low", "high")[k]
            symbols.append(
                (
                    sid,
                    f"id{sid}",
                    name,
                    name,
                    name,
                    name,
                    "function",
                    path,
                    module,
                    "python",
                    k * 4 + 1,
                    k * 4 + 3,
                    f"def {name}()",
                    "",
                    None,
                    1,
                    "[]",
                    0,
                    0,
                    1,
                    0,
                    risk,
                    "[]",
                    "",
                )
            )
            if sid > 1:
                callee = f"id{(sid * 7) % sid or 1}"
                edges.append((i + 1, f"id{sid}", None, name, None, 1, 0, 0, callee, "unique", None))
    drop_secondary_indexes(conn)  # bulk load as the indexer does, then index once
    conn.executemany("INSERT INTO files VALUES (?,?,?,?,?,?,?,?,?,?)", files)
    conn.executemany(f"INSERT INTO symbols VALUES ({','.join('?' * 24)})", symbols)
    conn.executemany("INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?)", edges)
    create_secondary_indexes(conn)
    conn.commit()
    conn.close()


def test_overview_of_20000_files_stays_bounded_in_tokens_and_memory(make_repo) -> None:
    root = make_repo(
        {"README.md": "# Synthetic\n\nA generated repository for the bound test.\n"}, git_init=False
    )
    layout = RepoLayout.for_path(root)
    _fill_synthetic_store(layout, 20_000)
    conn = open_index(layout)
    tracemalloc.start()
    try:
        ov = build_overview(layout, conn)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ov.tokens <= 2500, ov.tokens
    assert len(ov.toon) / 4 <= 2500
    assert peak < PEAK_BYTES_LIMIT, f"peak {peak} bytes: the overview enumerated instead of aggregating"
    data = toon_format.loads(ov.toon)
    assert data["totals"]["files"] == 20_000
    assert data["totals"]["symbols"] == 100_000
    assert 1 <= len(data["modules"]) <= MAX_MODULES
    assert sum(m["files"] for m in data["modules"]) == 20_000  # modules partition the repository
    assert data["risk"] == {"high": 20_000, "medium": 20_000, "low": 60_000}


def test_overview_shrinks_when_names_are_pathologically_long(make_repo) -> None:
    root = make_repo({"a.py": "x = 1\n"}, git_init=False)
    layout = RepoLayout.for_path(root)
    _fill_synthetic_store(layout, 3000, dir_name_len=180)
    ov = build_overview(layout, open_index(layout))
    assert ov.tokens <= 2500
    assert toon_format.loads(ov.toon)["totals"]["files"] == 3000


def test_overview_of_a_real_repository_names_modules_frameworks_entry_points_and_hubs(make_repo) -> None:
    root = make_repo(
        {
            "pyproject.toml": (
                '[project]\nname = "shop"\ndependencies = ["django>=5", "celery"]\n'
                '[project.scripts]\nshop = "shop.cli:main"\n'
            ),
            "package.json": json.dumps(
                {"name": "shop-ui", "dependencies": {"react": "18"}, "bin": {"ui": "ui.js"}}
            ),
            "shop/__init__.py": '"""Orders, carts and payments for the shop."""\n',
            "shop/__main__.py": "from shop.cli import main\nmain()\n",
            "shop/cli.py": "from shop.core import price\n\ndef main():\n    price()\n    price()\n",
            "shop/core.py": "def price():\n    return 1\n\nclass Cart:\n    def total(self):\n        return price()\n",
            "ui/README.md": "# UI\n\nThe React front end of the shop.\n",
            "ui/app.js": "function render() { return 1; }\n",
        }
    )
    layout = RepoLayout.for_path(root)
    index_repository(layout, load_settings(layout.root).settings, text_index=False)
    ov = build_overview(layout, open_index(layout))
    data = toon_format.loads(ov.toon)
    assert data["project"] == "shop"
    assert {"Django", "Celery", "React"} <= set(data["frameworks"])
    modules = {m["name"].rstrip("/"): m for m in data["modules"]}
    assert modules["shop"]["purpose"] == "Orders, carts and payments for the shop."
    assert modules["ui"]["purpose"] == "The React front end of the shop."
    kinds = {(e["kind"], e["where"]) for e in data["entry_points"]}
    assert ("console_script", "shop.cli:main") in kinds
    assert ("__main__", "shop/__main__.py") in kinds
    assert ("bin", "ui.js") in kinds
    assert data["hubs"][0]["symbol"] == "price" and data["hubs"][0]["callers"] >= 2
    assert {"name": "python", "files": 4, "lines": data["languages"][0]["lines"]} in data["languages"]


_SEGMENT = st.sampled_from(["a", "b", "db", "django", "x", "models", ""])
_DIR = st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join)


@settings(max_examples=300, deadline=None)
@given(path=_DIR, names=st.lists(_DIR, max_size=8))
def test_a_dependency_is_folded_into_the_longest_module_above_it(path: str, names: list[str]) -> None:
    # The overview's dependency list folds each directory into the longest module that is it or
    # holds it; "." when none does (and, as before, for a one-character module name).
    plain = max(
        (n for n in names if (path == n or path.startswith(n + "/")) and len(n) > 1), key=len, default="."
    )
    assert _module_of(path, names) == _module_of(path, set(names)) == plain


def test_a_directory_too_wide_to_split_whole_lists_its_largest_parts(make_repo) -> None:
    """boost's ``include/boost/`` has 150 subdirectories: more than the 50 modules an overview lists.
    It was one module with every file of the tree; its largest subdirectories are listed now."""
    files = {"README.md": "# Wide\n\nA library of many small parts.\n"}
    for i in range(70):
        size = 6 if i < 3 else 1  # three parts are larger than the others
        for k in range(size):
            files[f"include/lib/part{i:02d}/f{k}.py"] = (
                f"class Part{i}Thing{k}:\n    def run(self):\n        return {k}\n"
            )
    root = make_repo(files)
    layout = RepoLayout.for_path(root)
    index_repository(layout, load_settings(layout.root).settings, text_index=False)
    data = toon_format.loads(build_overview(layout, open_index(layout)).toon)
    modules = {m["name"]: m for m in data["modules"]}
    assert len(modules) == MAX_MODULES
    for i in range(3):  # the largest parts are modules of their own, with their own counts
        assert modules[f"include/lib/part{i:02d}/"]["files"] == 6
    # the directory keeps the parts not listed (70 parts, 49 listed apart: 21 files left)
    assert modules["include/lib/"]["files"] == 21
    assert sum(m["files"] for m in data["modules"]) == data["totals"]["files"] == 3 * 6 + 67
    # its purpose names a type of its own, not one of a part listed apart
    purpose = modules["include/lib/"]["purpose"]
    assert purpose.startswith("types: ") and not any(f"Part{i}Thing" in purpose for i in range(49))
