"""The order a cold build hands files to its parse workers: progress counts files, so the ETA shown
beside it is only true when any stretch of files holds as many bytes as any other."""

from __future__ import annotations

import random
import subprocess
import sys

from engine.index.indexer import PARSE_FIRST_SHARE, parse_order
from engine.store.discovery import Candidate


def _tree(seed: int, n: int = 4000) -> list[Candidate]:
    """File sizes as code trees have them: most a few KB, a long tail of large ones."""
    rng = random.Random(seed)
    sizes = [min(1_000_000, int(rng.lognormvariate(8.3, 1.3))) for _ in range(n)]
    return [Candidate(f"pkg{i % 37}/mod_{i}.py", size, 0, "python") for i, size in enumerate(sizes)]


def _bytes_share(order: list[Candidate], files_share: float) -> float:
    total = sum(c.size for c in order)
    return sum(c.size for c in order[: int(len(order) * files_share)]) / total


def test_every_stretch_of_files_handed_out_holds_its_share_of_the_bytes() -> None:
    for seed in (1, 2, 3):
        tree = _tree(seed)
        largest_first = sorted(tree, key=lambda c: -c.size)
        assert _bytes_share(largest_first, 0.10) > 0.35  # the old order: the ETA was 3x too long
        order = parse_order(tree)
        for share in (0.05, 0.10, 0.25, 0.50, 0.75):
            assert abs(_bytes_share(order, share) - share) < 0.08, (seed, share)


def test_a_file_that_holds_a_large_share_of_the_bytes_is_parsed_first() -> None:
    tree = _tree(4, n=300)
    total = sum(c.size for c in tree)
    huge = Candidate("vendor/generated_tables.py", max(c.size for c in tree) + total // 20, 0, "python")
    order = parse_order([*tree, huge])
    assert order[0] == huge  # not last on a lone worker while the other one idles
    threshold = (total + huge.size) * PARSE_FIRST_SHARE
    head = [c for c in order if c.size > threshold]
    assert order[: len(head)] == sorted(head, key=lambda c: -c.size)


def test_one_tree_is_always_handed_out_in_one_order(tmp_path) -> None:
    """Symbols are numbered in the order files are written: it must not depend on discovery's order."""
    tree = _tree(5, n=500)
    shuffled = list(tree)
    random.Random(9).shuffle(shuffled)
    assert parse_order(tree) == parse_order(shuffled)
    # and on the paths themselves, not on anything of this process (a fresh interpreter agrees)
    probe = "from engine.index.indexer import parse_order\nfrom engine.store.discovery import Candidate\n"
    probe += "cs = [Candidate(f'a/f{i}.py', 100 + i % 7, 0, 'python') for i in range(50)]\n"
    probe += "print([c.path for c in parse_order(cs)][:10])\n"
    runs = {
        subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    }
    assert len(runs) == 1
