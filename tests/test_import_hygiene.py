"""The layering is real: engine never loads textual; `semfora --help` loads no heavy client."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

HEAVY = ("anthropic", "chromadb", "litellm", "onnxruntime", "textual")


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sorted({m.split('.')[0] for m in sys.modules})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    return set(out.stdout.split())


def test_engine_never_imports_textual() -> None:
    modules = _loaded_after(
        "import pkgutil, importlib, engine\n"
        "for m in pkgutil.walk_packages(engine.__path__, 'engine.'):\n"
        "    importlib.import_module(m.name)\n"
    )
    assert "engine" in modules
    assert "textual" not in modules


def test_help_imports_no_heavy_client() -> None:
    modules = _loaded_after(
        "import sys\nfrom semfora_cli.main import main\nsys.argv=['semfora','--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
    )
    assert "semfora_cli" in modules
    # The command line is its own package: its help never loads the app.
    assert "semfora_tui" not in modules
    for heavy in HEAVY:
        assert heavy not in modules, heavy


def test_engine_source_has_no_textual_import() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "engine").rglob("*.py")
        if any(
            line.strip().startswith(("import textual", "from textual"))
            for line in p.read_text(encoding="utf-8").splitlines()
        )
    ]
    assert offenders == []
