"""A package that ships TypeScript declarations beside its JavaScript (axios, commander) has
every class and function twice: the pack spends its budget on the implementation, where a change
goes, unless the task is about the types."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.orchestrator.context.rank import asks_for_types
from engine.orchestrator.core import Orchestrator
from engine.repo.layout import RepoLayout

ERROR_JS = """'use strict';

/**
 * Create an Error with the specified message, config, error code, request and response.
 */
function HttpError(message, code, config, request, response) {
  Error.call(this);
  this.message = message;
  this.name = 'HttpError';
  code && (this.code = code);
  config && (this.config = config);
  request && (this.request = request);
  response && (this.response = response);
}

HttpError.from = function from(error, code, config, request, response) {
  const httpError = new HttpError(error.message, code, config, request, response);
  httpError.cause = error;
  return httpError;
};

export default HttpError;
"""

# The declarations restate the error, its config and the client with every word of the task.
DECLARATIONS = "\n".join(
    [
        "export class HttpError<T = unknown> extends Error {",
        "  constructor(message?: string, code?: string, config?: RequestConfig, request?: any, response?: Response<T>);",
        "  config?: RequestConfig;",
        "  code?: string;",
        "  request?: any;",
        "  response?: Response<T>;",
        "  status?: number;",
        "  cause?: Error;",
        "  static from<T>(error: Error, code?: string, config?: RequestConfig, request?: any, response?: Response<T>): HttpError<T>;",
        "}",
        *[
            f"export interface RequestConfig{i} {{\n  /** the error status of the response, the request's code {i} */\n"
            f"  status{i}?: number;\n  code{i}?: string;\n  response{i}?: Response;\n}}"
            for i in range(12)
        ],
        *[
            f"export declare function createError{i}(message: string, code?: string, response?: Response): HttpError;"
            for i in range(12)
        ],
    ]
)

FILES = {
    "package.json": '{"name": "httpkit", "main": "lib/index.js", "types": "index.d.ts"}\n',
    "lib/core/HttpError.js": ERROR_JS,
    "lib/index.js": "import HttpError from './core/HttpError.js';\nexport { HttpError };\n",
    "index.d.ts": DECLARATIONS + "\n",
    "index.d.cts": DECLARATIONS + "\n",  # the CommonJS copy of the same declarations
}


def _orchestrator(make_repo: Callable[..., Path]) -> Orchestrator:
    root = make_repo(FILES)
    layout = RepoLayout.for_path(root)
    cfg = load_settings(layout.root).settings
    index_repository(layout, cfg)
    return Orchestrator(layout, cfg)


def test_the_implementation_comes_before_its_declarations(make_repo) -> None:
    orch = _orchestrator(make_repo)
    pack = orch.build_context("add the missing status property to HttpError from the response", budget=700)
    sources = [(i.file, i.symbol) for i in pack.items if i.kind == "source"]
    assert ("lib/core/HttpError.js", "HttpError") in sources, sources
    first_declaration = next((n for n, (f, _) in enumerate(sources) if f == "index.d.ts"), len(sources))
    assert sources.index(("lib/core/HttpError.js", "HttpError")) < first_declaration, sources


def test_a_task_about_the_types_gets_the_declarations() -> None:
    assert asks_for_types("fix the typings of HttpError.from", [])
    assert asks_for_types("the TypeScript declaration of status is wrong", [])
    assert asks_for_types("status is missing", ["index.d.ts"])
    assert not asks_for_types("add the missing status property to HttpError", [])


def test_a_need_for_a_name_serves_its_implementation_before_its_declarations(make_repo) -> None:
    """`NEED: HttpError` served the first two definitions in the index's order, both
    declarations (index.d.cts, index.d.ts), and never the function in lib/core/HttpError.js."""
    orch = _orchestrator(make_repo)
    pack = orch.build_context("what does the package.json say", budget=500)
    assert not any(i.file == "lib/core/HttpError.js" for i in pack.items), [i.file for i in pack.items]
    served = orch.resolve_need(pack, ["HttpError"], budget=4000)
    assert served and served[0].file == "lib/core/HttpError.js", [i.file for i in served]
