"""Start the Textual app. Imported only when `semfora [PATH]` opens the UI."""

from __future__ import annotations

import argparse

from engine.errors import SemforaError
from engine.repo.layout import find_repo_root


def run_app(args: argparse.Namespace) -> int:
    from semfora_tui.cli.output import report_error

    try:
        root = find_repo_root(args.path)
        from semfora_tui.app import SemforaApp

        # Settings are read here: a bad config.toml is reported before the screen switches.
        app = SemforaApp(root, model=args.model, budget=args.budget, resume=args.resume)
    except SemforaError as err:
        return report_error(err, as_json=False)
    app.run()
    return int(app.return_code or 0)
