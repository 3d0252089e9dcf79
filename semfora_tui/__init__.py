"""semfora's Textual app, one of its three faces (app, command line, MCP server).

This is the only package that imports ``textual``. It reaches the engine through
``semfora_tui.engine_bridge`` (which asks ``engine.api``) and never imports the command line
(``semfora_cli``); the command line imports it lazily, only to open the app.
"""
