"""`semfora doctor`: print the checks and exit 1 if any failed.

The checks live in engine.doctor; this module only chooses text or JSON.
"""

from __future__ import annotations

import argparse
import sys

from engine.errors import EXIT_OK, EXIT_PROBLEM
from semfora_cli.output import print_json


def run(args: argparse.Namespace) -> int:
    from engine.doctor import run_doctor

    report = run_doctor(args.path, network=not args.no_network)
    if args.json:
        print_json(report.to_json())
    else:
        sys.stdout.write(report.to_text() + "\n")
    return EXIT_OK if report.ok else EXIT_PROBLEM
