"""Repository root detection: git top level, plain directories, ignored sub-trees."""

from __future__ import annotations


def test_an_ignored_directory_inside_a_work_tree_is_its_own_root(make_repo) -> None:
    from engine.repo.layout import find_repo_root

    root = make_repo({".gitignore": "scratch/\n", "app.py": "x = 1\n"})
    (root / "scratch" / "corpus").mkdir(parents=True)
    (root / "src").mkdir()
    assert find_repo_root(root / "scratch" / "corpus") == (root / "scratch" / "corpus").resolve()
    assert find_repo_root(root / "src") == root.resolve()
    assert find_repo_root(root) == root.resolve()


def test_two_clones_of_one_remote_never_share_a_cache(make_repo, tmp_path) -> None:
    """Same directory name, same remote: an edit staged in one is not committed into the other."""
    import subprocess

    from engine.repo.layout import RepoLayout, working_tree_id
    from tests.conftest import git, run_semfora

    origin = make_repo({"app.py": "def f():\n    return 1\n"})
    clones = []
    for parent in ("a", "b"):
        (tmp_path / parent).mkdir()
        dest = tmp_path / parent / "project"
        subprocess.run(["git", "clone", "-q", str(origin), str(dest)], check=True)
        git(dest, "remote", "set-url", "origin", "https://github.com/example/project.git")
        clones.append(dest)
    first, second = (RepoLayout.for_path(c) for c in clones)
    assert first.repo_id != second.repo_id
    assert first.cache_dir != second.cache_dir
    assert first.repo_id == working_tree_id(clones[0]) == RepoLayout.for_path(clones[0]).repo_id
    assert first.repo_id.startswith("project-")

    edit = "app.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
    staged = run_semfora("edits", "stage", "-", "--path", str(clones[0]), input=edit)
    assert staged.returncode == 0, staged.stderr
    other = run_semfora("edits", "commit", "--all", "--path", str(clones[1]), "--json")
    assert "return 1" in (clones[1] / "app.py").read_text()  # nothing crossed over
    assert "return 1" in (clones[0] / "app.py").read_text()  # and the first is still only staged
    assert other.returncode in (0, 1)
    mine = run_semfora("edits", "commit", "--all", "--path", str(clones[0]))
    assert mine.returncode == 0, mine.stderr
    assert "return 2" in (clones[0] / "app.py").read_text()
