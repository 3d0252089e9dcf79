"""The user docs stay true: every error code is documented, and the command reference matches the parser.

The CLI and slash-command reference in docs/commands.md is generated from
`semfora_cli.main.build_parser()` and `semfora_tui.slash.COMMANDS`; regenerate it with
``python -m tests.test_docs``. The other checks hold what a reader acts on in every page: the
settings, environment variables, flags, slash commands, source paths, MCP tools and the
links (with their #anchors) the pages name exist in the code and in the docs.
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
        "`semfora [PATH] [--path P] [--model M] [--budget N] [--resume]` opens the app on the repository at PATH.",
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


def test_every_documented_error_code_is_still_emitted() -> None:
    # The other direction: a code renamed or dropped in the code must leave the tables of the docs,
    # or a user searches errors.md for a code semfora can no longer print.
    code = "\n".join(
        path.read_text(encoding="utf-8")
        for package in ("engine", "semfora_cli", "semfora_tui")
        for path in (ROOT / package).rglob("*.py")
    )
    stale = [
        f"{page.name}: {name}"
        for page in sorted(DOCS.glob("*.md"))
        for name in sorted(
            set(
                re.findall(
                    r"^\| (?:warning )?`([A-Z][A-Z0-9]*_[A-Z0-9_]+)`", page.read_text(encoding="utf-8"), re.M
                )
            )
        )
        if page.name != "commands.md" and not re.search(rf"\b{name}\b", code)
    ]
    assert stale == [], stale


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


def test_the_ranges_commands_enforce_are_in_their_help() -> None:
    # `semfora search --limit 500` answered "--limit must be between 1 and 200" though neither
    # --help nor commands.md gave the range.
    from engine.index.hybrid import MAX_LIMIT
    from engine.store.db import MAX_GRAPH_DEPTH
    from semfora_cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {
        (name, o): a.help or ""
        for name, p in sub.choices.items()
        for a in p._actions
        for o in a.option_strings
    }
    assert f"1-{MAX_LIMIT}" in helps[("search", "--limit")]
    assert f"1-{MAX_GRAPH_DEPTH}" in helps[("callers", "--depth")]


def test_the_budget_cap_commands_md_quotes_is_the_defaults() -> None:
    # `context --budget 150000` shows `.../94,000 tokens`: the page says why, with the default's number.
    from engine.config import BudgetSettings
    from engine.orchestrator.budget import ContextBudget

    b = BudgetSettings()
    window = ContextBudget(
        200_000,  # the largest --budget
        max_context_tokens=b.max_context_tokens,
        reserved_for_response=b.reserved_for_response,
        reserved_for_system=b.reserved_for_system,
    ).limit
    doc = (DOCS / "commands.md").read_text(encoding="utf-8")
    assert f"{window:,} by default" in doc and f'"budget": {window}' in doc


def _pages() -> list:
    return sorted([*DOCS.glob("*.md"), ROOT / "README.md"])


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_docs_and_readme_links_resolve() -> None:
    for page in ("architecture", "usage", "commands", "errors", "ci", "mcp", "configuration"):
        assert (DOCS / f"{page}.md").is_file(), page
    broken = []
    for page in [*DOCS.glob("*.md"), ROOT / "README.md"]:
        for target in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", page.read_text(encoding="utf-8")):
            if not (page.parent / target).resolve().is_file() and not (ROOT / target).is_file():
                broken.append(f"{page.name} -> {target}")
    assert broken == [], broken


def test_every_link_anchor_names_a_heading() -> None:
    # `[x](usage.md#local-embeddings-on-cpu)` must land on a heading, not the top of the page.
    anchors = {}
    for page in _pages():
        prose = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        anchors[page.resolve()] = {_slug(h) for h in re.findall(r"^#+ (.*)$", prose, re.M)}
    broken = []
    for page in _pages():
        for target, anchor in re.findall(r"\]\(([\w./-]*\.md)?#([\w-]+)\)", page.read_text(encoding="utf-8")):
            resolved = (page.parent / target).resolve() if target else page.resolve()
            if resolved in anchors and anchor not in anchors[resolved]:
                broken.append(f"{page.name} -> {target}#{anchor}")
    assert broken == [], broken


# `index.db`, `cache.py`, `metrics.key`: files whose names look like settings.
FILE_SUFFIXES = {"db", "py", "key", "lock", "toml", "json", "jsonl", "md", "sock", "tcss"}
SECTIONS = "llm|budget|ollama|index|search|cache|metrics|edits|git|ui"


def test_every_setting_the_docs_name_exists() -> None:
    # A reader copies `search.vector_service = "off"` into config.toml; a misspelt key is ignored there.
    from engine.config import iter_keys

    keys = {dotted for dotted, _default, _help in iter_keys()}
    pattern = re.compile(rf"`({SECTIONS})\.(\w+)(?:`|\s*=)|^\s*({SECTIONS})\.(\w+)\s*=", re.M)
    unknown = set()
    for page in _pages():
        for m in pattern.finditer(page.read_text(encoding="utf-8")):
            section, key = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            if key not in FILE_SUFFIXES and f"{section}.{key}" not in keys:
                unknown.add(f"{page.name}: {section}.{key}")
    assert unknown == set(), sorted(unknown)


def test_every_environment_variable_the_docs_name_is_read() -> None:
    from engine.config import ENV_ALIASES, iter_keys

    keys = {dotted for dotted, _default, _help in iter_keys()}
    code = "\n".join(
        path.read_text(encoding="utf-8")
        for package in ("engine", "semfora_cli", "semfora_tui", "tests")
        for path in (ROOT / package).rglob("*.py")
    )
    unknown = set()
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        for name in set(re.findall(r"\bSEMFORA_[A-Z0-9_]*[A-Z0-9]\b", text)):
            section, _, key = name.removeprefix("SEMFORA_").lower().partition("__")
            if name in ENV_ALIASES or f"{section}.{key}" in keys:
                continue
            if f'"{name}' in code or re.search(
                rf"^\s*{name}:", text, re.M
            ):  # read by code, or a workflow's env:
                continue
            unknown.add(f"{page.name}: {name}")
    assert unknown == set(), sorted(unknown)


def test_every_flag_the_docs_give_a_command_exists() -> None:
    from semfora_cli.main import _tui_parser, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = {name: {o for a in p._actions for o in a.option_strings} for name, p in sub.choices.items()}
    app_flags = {o for a in _tui_parser()._actions for o in a.option_strings}
    wrong = []
    for page in _pages():
        # One command as written: `semfora NAME ...` up to the end of its code span, line or sentence.
        for m in re.finditer(r"(?<![\w-])semfora(?: ([a-z]+))?([^\n`|)]*)", page.read_text(encoding="utf-8")):
            name, rest = m.group(1), re.split(r" -- |\s#", m.group(2))[0]
            known = flags.get(name or "", app_flags)
            wrong += [
                f"{page.name}: semfora {name or ''} {f}"
                for f in re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest)
                if f not in known
            ]
    assert wrong == [], wrong


def test_the_slash_commands_in_the_docs_are_the_apps() -> None:
    from semfora_tui.slash import COMMANDS

    names = {c.usage.split()[0] for c in COMMANDS}
    tui = (DOCS / "tui.md").read_text(encoding="utf-8")
    table = tui.split("## Slash commands")[1].split("\n## ")[0]
    listed = set(re.findall(r"^\| `(/[a-z]+)", table, re.M)) | set(re.findall(r", `(/[a-z]+)", table))
    assert listed == names, f"docs/tui.md lists {sorted(listed - names)}, lacks {sorted(names - listed)}"
    named = set()
    for page in ("README.md", "docs/tui.md", "docs/usage.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        named |= set(re.findall(r"`(/[a-z]+)(?:[ `])", text))
    assert named - names == {"/comit"}, sorted(named - names)  # /comit: the documented typo


def test_every_source_path_the_docs_name_exists() -> None:
    missing = []
    for page in _pages():
        for path in set(
            re.findall(
                r"\b((?:engine|semfora_cli|semfora_tui|tests|themes)/[\w./-]*\w)",
                page.read_text(encoding="utf-8"),
            )
        ):
            module = re.sub(r"\.\w+$", ".py", path)  # tests/bench/bench_search.fresh_process: a function
            if not (ROOT / path).exists() and not (ROOT / module).is_file():
                missing.append(f"{page.name}: {path}")
    assert missing == [], missing


def test_the_mcp_tool_table_lists_every_tool() -> None:
    from engine.api import TOOLS

    doc = (DOCS / "mcp.md").read_text(encoding="utf-8")
    table = doc.split("## Tools")[1].split("\n## ")[0]
    listed = set(re.findall(r"^\| `(\w+)` \|", table, re.M))
    assert listed == {*TOOLS, "search", "analyze_diff"}


def test_every_constant_the_docs_quote_has_that_value() -> None:
    # orchestrator.md: "`BM25_K1` 1.2", "`MAP_SHARE` (12%)": a tuned constant and its page drift apart.
    assignment = re.compile(
        r"^([A-Z][A-Z0-9_]+)(?:: [^=\n]+)? = \"?([0-9][0-9_]*(?:\.[0-9_]+)?)\"?(?:\s*#.*)?$", re.M
    )
    values: dict[str, set[float]] = {}
    for package in ("engine", "semfora_cli", "semfora_tui"):
        for path in (ROOT / package).rglob("*.py"):
            for name, value in assignment.findall(path.read_text(encoding="utf-8")):
                values.setdefault(name, set()).add(float(value.replace("_", "")))
    quoted = re.compile(r"`([A-Z][A-Z0-9_]{3,})`\s*\(?(?:=\s*)?([0-9][0-9,]*(?:\.[0-9]+)?)(%?)")
    wrong = []
    for page in _pages():
        if page.name == "benchmarks.md":  # a record: it quotes constants as they were when measured
            continue
        for name, value, percent in quoted.findall(page.read_text(encoding="utf-8")):
            number = float(value.replace(",", "")) / (100 if percent else 1)
            if number not in values.get(name, set()):
                wrong.append(f"{page.name}: {name} {value}{percent} (code: {sorted(values.get(name, []))})")
    assert wrong == [], wrong


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
