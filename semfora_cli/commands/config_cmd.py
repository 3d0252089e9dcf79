"""`semfora config`: the effective settings and the source of each value.

Invalid settings are a ConfigError (exit 2), including what no single field can check
(an installed theme), so `semfora config` is the place to validate a configuration.
"""

from __future__ import annotations

import argparse
import json

from engine.config import check_settings, iter_keys, load_settings
from engine.policy.redaction import redact_json
from engine.repo.layout import find_repo_root
from semfora_cli.output import print_json


def _lookup(settings: object, dotted: str) -> object:
    node = settings
    for part in dotted.split("."):
        node = getattr(node, part)
    if hasattr(node, "model_dump"):
        return node.model_dump()
    if isinstance(node, dict):
        return {k: (v.model_dump() if hasattr(v, "model_dump") else v) for k, v in node.items()}
    return node


def run(args: argparse.Namespace) -> int:
    root = find_repo_root(args.path)
    loaded = load_settings(root)
    check_settings(loaded)
    rows = []
    for dotted, _default, _doc in iter_keys():
        # A URL's password (ollama.host = "http://user:PASSWORD@host") is masked, in JSON and
        # before the text cuts a long value (a cut password is no longer recognised as one).
        value = redact_json(_lookup(loaded.settings, dotted))
        rows.append({"key": dotted, "value": value, "source": loaded.source_of(dotted)})
    trust = loaded.trust.to_json() if loaded.trust else {"state": "none", "file": None}
    ignored = [{"key": i.key, "reason": i.reason, "detail": i.detail} for i in loaded.ignored]
    if args.json:
        print_json(
            {"files": [str(f) for f in loaded.files], "settings": rows, "trust": trust, "ignored": ignored}
        )
        return 0
    width = max(len(str(r["key"])) for r in rows)
    for r in rows:
        value = json.dumps(r["value"]) if not isinstance(r["value"], str) else r["value"]
        if len(value) > 70:
            value = value[:67] + "..."
        print(f"{r['key']:<{width}}  {value}  [{r['source']}]")
    if loaded.trust is not None:
        print(f"trust  .semfora.toml is {loaded.trust.state} ({loaded.trust.file})")
        for i in loaded.ignored:
            print(f"ignored  {i.describe()}  (until `semfora trust`)")
    return 0
