"""semfora's built-in themes, shipped as YAML data files beside this module.

Only data lives here; `semfora_tui.theming` validates and registers the files.
"""
