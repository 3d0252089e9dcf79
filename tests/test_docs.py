"""The user docs stay true: every error code is documented, and the command reference matches the parser.

The CLI and slash-command reference in docs/commands.md is generated from
`semfora_cli.main.build_parser()` and `semfora_tui.slash.COMMANDS`; regenerate it with
``python -m tests.test_docs``.
"""

from __future__ import annotations

import argparse
import re

from tests.conftest import ROOT

DOCS = ROOT / "docs"
CODE_PATTERNS = (
    re.compile(r"\bcode\s*=\s*\"([A-Z][A-Z0-9_]+)\""),  # class attribute or keyword argument
    re.compile(r"\"(DOCTOR_[A-Z0-9_]+)\""),  # doctor checks pass their code positionally
    re.compile(r"EngineWarning\(\s*\"([A-Z][A-Z0-9_]+)\""),  # warnings the engine reports
)
GENERATED = re.compile(r"(<!-- BEGIN generated:(\w+) -->\n).*?(<!-- END generated:\2 -->)", re.S)


def defined_codes() -> dict[str, str]:
    """Every error code defined under engine/ and semfora_tui/, with the first file defining it."""
    found: dict[str, str] = {}
    for package in ("engine", "semfora_tui"):
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for pattern in CODE_PATTERNS:
                for code in pattern.findall(text):
                    found.setdefault(code, str(path.relative_to(ROOT)))
    return found


def _option_line(action: argparse.Action) -> str:
    if action.option_strings:
        name = ", ".join(f"`{o}`" for o in action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or (
                "{" + ",".join(action.choices) + "}" if action.choices else action.dest.upper()
            )
            name += f" {metavar}"
    else:
        name = f"`{action.metavar or action.dest.upper()}`"
        if action.choices:
            name += " (" + " \\| ".join(f"`{c}`" for c in action.choices) + ")"
    extra = []
    if action.required and action.option_strings:
        extra.append("required")
    if action.default not in (None, False, argparse.SUPPRESS) and action.nargs != 0:
        extra.append(f"default `{action.default}`")
    if action.choices and action.option_strings:
        extra.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
    text = (action.help or "").replace("|", "\\|")
    tail = f" ({'; '.join(extra)})" if extra else ""
    return f"| {name} | {text}{tail} |"


def render_cli() -> str:
    from semfora_cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in sub._choices_actions}
    out = [
        "`semfora [PATH] [--model M] [--budget N] [--resume]` opens the app on the repository at PATH.",
        "",
    ]
    for name, p in sub.choices.items():
        usage = " ".join(p.format_usage().split())[len("usage: ") :]
        out += [f"### `semfora {name}`", "", helps.get(name) or "", "", f"`{usage}`", ""]
        rows = [a for a in p._actions if not isinstance(a, argparse._HelpAction)]
        if rows:
            out += ["| argument | meaning |", "|---|---|"]
            out += [_option_line(a) for a in rows]
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_slash() -> str:
    from semfora_tui.slash import COMMANDS

    out = ["| command | what it does |", "|---|---|"]
    for c in COMMANDS:
        usage = c.usage.replace("|", "\\|")
        out.append(f"| `{usage}` | {c.help} |")
    return "\n".join(out) + "\n"


RENDERERS = {"cli": render_cli, "slash": render_slash}


def regenerate(text: str) -> str:
    return GENERATED.sub(lambda m: m.group(1) + RENDERERS[m.group(2)]() + m.group(3), text)


def test_every_error_code_is_documented() -> None:
    doc = (DOCS / "errors.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", doc))
    missing = {code: where for code, where in defined_codes().items() if code not in documented}
    assert not missing, f"add these codes to docs/errors.md: {missing}"


def test_command_reference_matches_the_parser() -> None:
    doc = (DOCS / "commands.md").read_text(encoding="utf-8")
    kinds = {m.group(2) for m in GENERATED.finditer(doc)}
    assert kinds == {"cli", "slash"}
    assert doc == regenerate(doc), "regenerate: python -m tests.test_docs"


def test_every_argument_says_what_it_is_for_in_help() -> None:
    # `semfora callers --help` once listed `--depth DEPTH` with no word of what it does.
    from semfora_cli.main import _tui_parser, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parsers = {"semfora [PATH]": _tui_parser(), **{f"semfora {n}": p for n, p in sub.choices.items()}}
    silent = [
        f"{name} {action.option_strings[0] if action.option_strings else action.dest}"
        for name, p in parsers.items()
        for action in p._actions
        if not isinstance(action, argparse._HelpAction | argparse._VersionAction) and not action.help
    ]
    assert silent == []


def test_docs_and_readme_links_resolve() -> None:
    for page in ("architecture", "usage", "commands", "errors", "ci", "mcp", "configuration"):
        assert (DOCS / f"{page}.md").is_file(), page
    broken = []
    for page in [*DOCS.glob("*.md"), ROOT / "README.md"]:
        for target in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", page.read_text(encoding="utf-8")):
            if not (page.parent / target).resolve().is_file() and not (ROOT / target).is_file():
                broken.append(f"{page.name} -> {target}")
    assert broken == [], broken


def test_ci_doc_workflow_uses_full_history_and_the_real_command() -> None:
    doc = (DOCS / "ci.md").read_text(encoding="utf-8")
    assert "fetch-depth: 0" in doc
    assert "semfora ci --mode pr" in doc and "semfora ci --mode commit --commit HEAD" in doc


def main() -> None:
    path = DOCS / "commands.md"
    path.write_text(regenerate(path.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"regenerated {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
