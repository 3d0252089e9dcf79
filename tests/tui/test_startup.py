"""What the first frame pays for: opening the app must not import the heavy libraries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import run_semfora

# (Textual's TextArea itself loads the small tree_sitter binding; the grammar pack is the heavy part.)
HEAVY = (
    "anthropic",
    "chromadb",
    "litellm",
    "onnxruntime",
    "sentence_transformers",
    "torch",
    "tree_sitter_language_pack",
)


def test_building_the_app_imports_no_heavy_library(demo_repo: Path) -> None:
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "import semfora_cli.main, semfora_tui.launch\n"
        "from semfora_tui.app import SemforaApp\n"
        f"SemforaApp(Path({str(demo_repo)!r}))\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.strip() == ""


def test_engine_bridge_does_not_import_textual() -> None:
    code = "import sys, semfora_tui.engine_bridge, semfora_tui.views; print('textual' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.strip() == "False"


def test_a_bad_config_file_is_one_error_line_not_a_traceback(demo_repo: Path) -> None:
    (demo_repo / ".semfora.toml").write_text("[budget]\ncontext_tokens = 5\n")
    proc = run_semfora(str(demo_repo), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error[CONFIG_INVALID]: budget.context_tokens")
    assert "Traceback" not in proc.stderr


def test_a_missing_path_is_exit_2(tmp_path: Path) -> None:
    proc = run_semfora(str(tmp_path / "nope"), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error[PATH_NOT_FOUND]")


def test_app_flags_work_without_a_path(demo_repo: Path) -> None:
    """`semfora --resume`, `--model M` and `--budget N` open the app on the current directory."""
    # A bad repository config fails in the settings, after parsing: proof the flags parsed.
    (demo_repo / ".semfora.toml").write_text("[ui]\nno_such_key = 1\n")
    for args in (
        ["--resume"],
        ["--model", "ollama/x"],
        ["--budget", "4000"],
        ["--resume", "--budget", "4000"],
    ):
        proc = run_semfora(*args, cwd=demo_repo, timeout=60)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("error[CONFIG_INVALID]"), (args, proc.stderr)
    assert "COMMAND" in run_semfora("--help", timeout=60).stdout
    proc = run_semfora("--no-such-flag", cwd=demo_repo, timeout=60)
    assert proc.returncode == 2 and "unrecognized arguments" in proc.stderr
