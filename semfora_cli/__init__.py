"""The `semfora` command line, one of semfora's three faces (app, command line, MCP server).

Owns argument parsing, dispatch, printing (text or the JSON contract of BRIEF.md) and error
reporting. It asks the engine through its front door, ``engine.api``, and never imports the
Textual app except lazily in the one path that opens it (`semfora [PATH]`), so every headless
command runs without ``textual`` or ``semfora_tui`` loaded (tests/test_headless_entry_points.py).
"""
