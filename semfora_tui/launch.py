"""Start the Textual app. Imported only when `semfora [PATH]` opens the UI."""

from __future__ import annotations

import argparse

from engine.errors import SemforaError
from engine.store.layout import find_repo_root


def run_app(args: argparse.Namespace) -> int:
    from semfora_tui.cli.output import report_error

    try:
        root = find_repo_root(args.path)
    except SemforaError as err:
        return report_error(err, as_json=False)
    from semfora_tui.app import SemforaApp

    app = SemforaApp(root, model=args.model, budget=args.budget, resume=args.resume)
    app.run()
    return int(app.return_code or 0)
