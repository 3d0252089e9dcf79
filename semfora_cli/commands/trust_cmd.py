"""`semfora trust [--path P] [--revoke]`: trust (or stop trusting) a repository's .semfora.toml.

Until trusted, the repository file cannot run commands, widen what is read or send code
elsewhere (engine.policy.trust lists the settings). Trust is pinned to the file's SHA-256:
editing the file needs trusting again. This module only prints; the store is engine.config's.
"""

from __future__ import annotations

import argparse
import sys

from engine.config import repo_config_path, settings_needing_trust, trust_store
from engine.errors import UsageError
from engine.repo.layout import find_repo_root
from semfora_cli.output import print_json


def run(args: argparse.Namespace) -> int:
    root = find_repo_root(args.path)
    repo_file = repo_config_path(root)
    store = trust_store()
    if args.revoke:
        was = store.revoke(root)
        if args.json:
            print_json({"ok": True, "root": str(root), "revoked": was})
        else:
            sys.stdout.write(
                f"{root}: no longer trusted; its .semfora.toml commands and wider reads are ignored\n"
                if was
                else f"{root}: was not trusted; nothing to do\n"
            )
        return 0
    if not repo_file.is_file():
        raise UsageError(
            f"{root} has no .semfora.toml: there is nothing to trust",
            code="REPO_CONFIG_NOT_FOUND",
        )
    gated = [
        {"key": key, "value": value, "reason": reason}
        for key, value, reason in settings_needing_trust(repo_file)
    ]
    record = store.trust(root, repo_file)
    if args.json:
        print_json({"ok": True, **record.to_json(), "trust_file": str(store.path), "settings": gated})
        return 0
    lines = [f"trusted {repo_file} (sha256 {record.digest[:12] if record.digest else '?'}...)"]
    if gated:
        lines.append("these settings now apply:")
        lines += [f"  {g['key']} = {g['value']!r}  ({g['reason']})" for g in gated]
    else:
        lines.append("it sets nothing that needed trust")
    lines.append("editing the file withdraws the trust until you run `semfora trust` again")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
