"""Secrets assigned with a type annotation (``password: str = "..."``) are masked like plain ones."""

from __future__ import annotations

import json

import pytest

from engine.policy.redaction import redact
from tests.conftest import run_semfora

ANNOTATED = [
    'password: str = "hunter2xyz"',
    'DB_PASSWORD: Final[str] = "hunter2xyz"',
    '    self.api_key: str = "hunter2xyz"',
    'client_secret: Optional[str] = "hunter2xyz"',
    'token: str | None = "hunter2xyz"',
    'let apiKey: string = "hunter2xyz";',
    'val apiKey: String = "hunter2xyz"',
    'def connect(password: str = "hunter2xyz"):',
]


@pytest.mark.parametrize("line", ANNOTATED)
def test_an_annotated_secret_assignment_is_masked(line: str) -> None:
    masked = redact(line)
    assert "hunter2xyz" not in masked and masked.count("\n") == line.count("\n")


@pytest.mark.parametrize(
    "line",
    ['password: str = field(default="")', 'token: str = ""', 'if password: str == "x"', "password: str"],
)
def test_code_that_only_names_a_secret_is_left_alone(line: str) -> None:
    assert redact(line) == line


def test_an_annotated_secret_never_reaches_the_context_pack(make_repo) -> None:
    """`semfora context` (what the model is sent) showed `DB_PASSWORD: str = "hunter2xyz"`."""
    root = make_repo(
        {
            "app/settings.py": (
                "class Settings:\n"
                '    """Database settings."""\n\n'
                '    DB_PASSWORD: str = "hunter2xyz"\n'
                '    DB_HOST: str = "localhost"\n\n'
                "    def dsn(self):\n"
                '        return f"postgres://{self.DB_HOST}"\n'
            )
        }
    )
    proc = run_semfora("context", "how does Settings build the dsn", "--json", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps(json.loads(proc.stdout))
    assert "DB_PASSWORD" in sent and "localhost" in sent  # the code is there...
    assert "hunter2xyz" not in sent  # ...its secret is not
