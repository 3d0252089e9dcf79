"""Start the Textual app. Imported only when `semfora [PATH]` opens the UI.

The command line (``semfora_cli``) imports this module lazily; the app never imports the
command line back, so the one error it can meet before the screen opens is printed here, in
the same one-line ``error[CODE]: message`` form the CLI uses.
"""

from __future__ import annotations

import argparse
import sys

from engine.errors import SemforaError
from engine.repo.layout import check_indexable, find_repo_root


def _report_error(err: SemforaError) -> int:
    line = f"error[{err.code}]: {err.message}"
    if err.hint:
        line += f" ({err.hint})"
    sys.stderr.write(line.replace("\n", " ") + "\n")
    return err.exit_code


def run_app(args: argparse.Namespace) -> int:
    try:
        root = find_repo_root(args.path)
        check_indexable(root)  # `semfora` typed in ~ or / is said before the screen opens
        from semfora_tui.app import SemforaApp

        # Settings are read here: a bad config.toml is reported before the screen switches.
        app = SemforaApp(root, model=args.model, budget=args.budget, resume=args.resume)
    except SemforaError as err:
        return _report_error(err)
    app.run()
    notice = app.exit_notice()  # said on the terminal once the screen is gone
    if notice:
        sys.stderr.write(notice + "\n")
    return int(app.return_code or 0)
