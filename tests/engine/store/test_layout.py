"""Repository root detection: git top level, plain directories, ignored sub-trees."""

from __future__ import annotations


def test_an_ignored_directory_inside_a_work_tree_is_its_own_root(make_repo) -> None:
    from engine.store.layout import find_repo_root

    root = make_repo({".gitignore": "scratch/\n", "app.py": "x = 1\n"})
    (root / "scratch" / "corpus").mkdir(parents=True)
    (root / "src").mkdir()
    assert find_repo_root(root / "scratch" / "corpus") == (root / "scratch" / "corpus").resolve()
    assert find_repo_root(root / "src") == root.resolve()
    assert find_repo_root(root) == root.resolve()
