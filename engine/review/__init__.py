"""Code review for CI and pre-commit: deterministic rules plus an optional model review.

Owns findings, the rules that read a semantic diff, secret scanning of added lines, the
Claude review prompt and the gate (status, risk score, exit code). It reads the semantic
diff (engine.semantic.diff) and never edits the repository.
"""
