"""Random sequences of stage, accept, reject, commit, undo and outside edits against a model.

Files have editable even lines separated by unique fixed lines, so each staged
line change is exactly one hunk. Every action loads the session afresh from disk,
which also proves that a restart shows the session unchanged.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from engine.edits import EditSession, undo
from engine.edits.errors import UndoRefused
from engine.repo.layout import RepoLayout

FILES = ("a.txt", "pkg/b.txt")
EDITABLE = (0, 2, 4)
LINES = 5


def _value(f: str, i: int, v: str) -> str:
    return f"{f}:{i}:{v}"


def _initial(f: str) -> list[str]:
    return [_value(f, i, "orig") if i in EDITABLE else f"# separator {f} {i}" for i in range(LINES)]


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


class EditModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="semfora-sm-"))
        for f in FILES:
            (self.root / f).parent.mkdir(parents=True, exist_ok=True)
            (self.root / f).write_text(_text(_initial(f)))
        self.layout = RepoLayout.for_path(self.root)
        self.disk = {f: _initial(f) for f in FILES}
        self.staged: dict[tuple[str, int], tuple[str, str]] = {}  # (file, line) -> (text, state)
        self.conflicts: list[tuple[str, int, str, str]] = []  # (file, line, old text, new text)
        self.history: list[tuple[dict[str, list[str]], dict[str, list[str]]]] = []
        self.counter = 0

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.layout.cache_dir, ignore_errors=True)

    def session(self) -> EditSession:
        return EditSession.load_or_create(self.layout)

    def _target(self, f: str) -> str:
        lines = list(self.disk[f])
        for (ff, i), (text, _) in self.staged.items():
            if ff == f:
                lines[i] = text
        return _text(lines)

    def _hunk_of(self, s: EditSession, f: str, i: int) -> str:
        text = self.staged[(f, i)][0]
        return next(h.id for h in s.hunks() if h.path == f and not h.conflict and h.new_lines == (text,))

    def _rebase(self) -> None:
        s = self.session()
        s.rebase()
        for (f, i), (text, _state) in list(self.staged.items()):
            if self.disk[f][i] == text:
                del self.staged[(f, i)]  # the same change is already on disk
            elif self.base[f][i] != self.disk[f][i]:
                del self.staged[(f, i)]
                self.conflicts.append((f, i, self.base[f][i], text))
        self.base = {f: list(v) for f, v in self.disk.items()}

    @property
    def base(self) -> dict[str, list[str]]:
        return self.__dict__.setdefault("_base", {f: _initial(f) for f in FILES})

    @base.setter
    def base(self, value: dict[str, list[str]]) -> None:
        self.__dict__["_base"] = value

    @rule(f=st.sampled_from(FILES), i=st.sampled_from(EDITABLE), v=st.sampled_from(["x", "y", "orig"]))
    def stage(self, f: str, i: int, v: str) -> None:
        text = _value(f, i, v)
        old = self.staged.get((f, i))
        if text == self.disk[f][i]:
            self.staged.pop((f, i), None)
        elif old is None or old[0] != text:
            self.staged[(f, i)] = (text, "pending")
        # Re-staging exactly a conflicting change against the same base resolves that conflict.
        self.conflicts = [
            c for c in self.conflicts if not (c[0] == f and c[2] == self.disk[f][i] and c[3] == text)
        ]
        self.session().stage_content(f, self._target(f))

    @precondition(lambda self: bool(self.staged))
    @rule(data=st.data(), action=st.sampled_from(["accept", "reject", "toggle"]))
    def decide(self, data: st.DataObject, action: str) -> None:
        key = data.draw(st.sampled_from(sorted(self.staged)))
        s = self.session()
        hid = self._hunk_of(s, *key)
        text, state = self.staged[key]
        new = getattr(s, action)(hid)
        if action == "toggle":
            expected = "rejected" if state == "accepted" else "accepted"
        else:
            expected = "accepted" if action == "accept" else "rejected"
        assert new == expected
        self.staged[key] = (text, expected)

    @rule(all_=st.booleans())
    def commit(self, all_: bool) -> None:
        if all_:
            self.staged = {k: (t, "accepted" if s == "pending" else s) for k, (t, s) in self.staged.items()}
        chosen = {k: t for k, (t, s) in self.staged.items() if s == "accepted"}
        result = self.session().commit(all=all_)
        assert result.committed == bool(chosen)
        if not chosen:
            return
        before = {f: list(self.disk[f]) for f, _ in chosen}
        for (f, i), text in chosen.items():
            self.disk[f][i] = text
            del self.staged[(f, i)]
        self.base = {f: list(v) for f, v in self.disk.items()}
        self.history.append((before, {f: list(self.disk[f]) for f in before}))
        assert set(result.files) == set(before)

    @rule(force=st.booleans())
    def undo_last(self, force: bool) -> None:
        if not self.history:
            return
        before, after = self.history[-1]
        changed = any(self.disk[f] != after[f] for f in after)
        if changed and not force:
            try:
                undo(self.layout)
            except UndoRefused:
                return
            raise AssertionError("undo should have refused")
        undo(self.layout, force=force)
        self.history.pop()
        for f, lines in before.items():
            self.disk[f] = list(lines)
        self._rebase()

    @rule(f=st.sampled_from(FILES), i=st.sampled_from(range(LINES)))
    def outside_edit(self, f: str, i: int) -> None:
        self.counter += 1
        self.disk[f][i] = f"{f}:{i}:outside{self.counter}"
        (self.root / f).write_text(_text(self.disk[f]))
        self._rebase()

    @invariant()
    def disk_matches_model(self) -> None:
        for f in FILES:
            assert (self.root / f).read_text() == _text(self.disk[f])

    @invariant()
    def session_matches_model(self) -> None:
        s = self.session()
        live = {}
        conflicts = []
        for h in s.hunks():
            if h.conflict:
                i = int(h.new_lines[0].split(":")[1])
                conflicts.append((h.path, i, h.old_lines[0], h.new_lines[0]))
                continue
            assert len(h.new_lines) == 1, h
            i = int(h.new_lines[0].split(":")[1])
            live[(h.path, i)] = (h.new_lines[0], h.state)
        assert live == self.staged
        assert sorted(conflicts) == sorted(self.conflicts)


EditModel.TestCase.settings = settings(max_examples=20, stateful_step_count=15, deadline=None)
TestEditSessionModel = EditModel.TestCase
