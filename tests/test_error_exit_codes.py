"""Every exit status the docs give an error code is the one the code exits with (issue 13, item 17).

The code side: every ``SemforaError`` subclass with a ``code`` and every ``SomeError(..., code="X")``
call under engine/ and semfora_tui/, resolved to its class's ``exit_code``. The docs side: every
page of docs/ and the README, read as people read them: a table with an ``exit`` column, a
``(exit N)`` after a code or in its row, or a section heading's ``(exit N)`` for its table's
rows (rows marked ``(warning)`` state no exit status).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from engine.errors import SemforaError
from tests.conftest import ROOT

PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
CODE = re.compile(r"`([A-Z][A-Z0-9_]{2,})`")
EXIT = re.compile(r"\(exit (\d)")
PROSE = re.compile(r"`([A-Z][A-Z0-9_]{2,})`\s*\(exit (\d)\)")


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _error_classes() -> dict[str, list[type[SemforaError]]]:
    for package in ("engine", "semfora_tui"):
        for path in sorted((ROOT / package).rglob("*.py")):
            importlib.import_module(_module_name(path))
    found: dict[str, list[type[SemforaError]]] = {}
    todo: list[type[SemforaError]] = [SemforaError]
    while todo:
        cls = todo.pop()
        found.setdefault(cls.__name__, []).append(cls)
        todo.extend(cls.__subclasses__())
    return found


def code_exits() -> dict[str, set[int]]:
    """Error code -> the exit statuses the code gives it."""
    classes = _error_classes()
    exits: dict[str, set[int]] = {}
    for package in ("engine", "semfora_tui"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name in classes:
                    for cls in classes[node.name]:
                        if "code" in cls.__dict__:
                            exits.setdefault(cls.code, set()).add(cls.exit_code)
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                    if name not in classes:
                        continue
                    for kw in node.keywords:
                        if (
                            kw.arg == "code"
                            and isinstance(kw.value, ast.Constant)
                            and isinstance(kw.value.value, str)
                        ):
                            for cls in classes[name]:
                                exits.setdefault(kw.value.value, set()).add(cls.exit_code)
    return exits


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def doc_exits(known: set[str]) -> list[tuple[str, int, str, int]]:
    """(page, line number, code, exit status) for every statement of an exit status in the docs."""
    out: list[tuple[str, int, str, int]] = []
    for page in PAGES:
        section_exit: int | None = None
        exit_column: int | None = None
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            where = page.relative_to(ROOT).as_posix()
            if line.startswith("#"):
                found = EXIT.search(line)
                section_exit = int(found.group(1)) if found else None
                continue
            if not line.startswith("|"):
                exit_column = None
                for code, status in PROSE.findall(line):
                    if code in known:
                        out.append((where, number, code, int(status)))
                continue
            cells = _cells(line)
            lowered = [c.lower() for c in cells]
            if "exit" in lowered:
                exit_column = lowered.index("exit")
                continue
            codes = [c for c in CODE.findall(cells[0]) if c in known]
            if len(codes) != 1:
                continue
            stated: int | None
            if exit_column is not None and exit_column < len(cells) and cells[exit_column].isdigit():
                stated = int(cells[exit_column])
            elif EXIT.search(line):
                stated = int(EXIT.search(line).group(1))  # type: ignore[union-attr]
            elif "(warning)" in line:
                stated = None
            else:
                stated = section_exit
            if stated is not None:
                out.append((where, number, codes[0], stated))
    return out


def test_every_error_code_has_one_exit_status_in_the_code() -> None:
    unstable = {code: sorted(statuses) for code, statuses in code_exits().items() if len(statuses) > 1}
    assert not unstable, (
        f"these codes exit with different statuses depending on where they are raised: {unstable}"
    )


def test_the_docs_give_every_error_code_the_exit_status_of_the_code() -> None:
    exits = code_exits()
    stated = doc_exits(set(exits))
    assert len(stated) > 40, "the docs parser found too few statements to be reading the tables"
    wrong = [
        f"{page}:{line}: {code} documented as exit {status}, the code exits {sorted(exits[code])}"
        for page, line, code, status in stated
        if status not in exits[code]
    ]
    assert not wrong, "\n".join(wrong)
