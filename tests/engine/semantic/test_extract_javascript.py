"""JavaScript/TypeScript extraction: assignment definitions, exports, risk, imports."""

from __future__ import annotations

from engine.semantic.extract import analyze_source, symbol_at

EXPRESS_LIKE = b"""
var proto = module.exports = function(options) {
  return router;
};

/**
 * Send a response.
 */
res.send = function send(body) {
  var chunk = body;
  if (typeof chunk === 'string' && !this.get('Content-Type')) {
    this.set('Content-Type', 'html');
  }
  return this;
};

proto.handle = function handle(req, res, out) {
  next();
  function next(err) {
    return out(err);
  }
};

exports.json = bodyParser.json;
"""


def test_assignment_definitions_are_named_by_their_target() -> None:
    analysis = analyze_source("lib/response.js", EXPRESS_LIKE)
    names = {s.qualified_name: s.kind for s in analysis.symbols}
    assert names["res.send"] == "function"
    assert names["proto.handle"] == "function"
    assert names["proto.handle.next"] == "function"
    assert names["exports.json"] == "variable"
    send = symbol_at(analysis, "res.send")
    assert send is not None
    assert send.doc == "Send a response."
    assert send.arity == 1
    assert send.signature == "res.send = function send(body)"
    assert send.control_flow == 2  # if, &&
    assert [(c.receiver, c.name) for c in send.calls] == [("this", "get"), ("this", "set")]
    assert symbol_at(analysis, "exports.json").exported is True


def test_export_and_arrow_functions() -> None:
    source = b"export const load = async (key) => { await db.get(key); };\nconst local = function () {};\n"
    analysis = analyze_source("a.mjs", source)
    load = symbol_at(analysis, "load")
    assert load is not None and load.is_async and load.exported and load.arity == 1
    assert load.calls[0].awaited
    local = symbol_at(analysis, "local")
    assert local is not None and local.kind == "function" and not local.exported


def test_js_risk_reasons_for_exec_eval_and_network() -> None:
    source = b"""
const { exec } = require('child_process');
import axios from 'axios';
function run(cmd) { exec(cmd); }
function evil(s) { return eval(s); }
async function pull() { return axios.get('http://x'); }
function quiet() { return 1; }
"""
    analysis = analyze_source("r.js", source)
    assert symbol_at(analysis, "run").risk.reasons == ("subprocess: child_process.exec",)
    assert symbol_at(analysis, "run").risk.level == "high"
    assert symbol_at(analysis, "evil").risk.level == "high"
    assert symbol_at(analysis, "pull").risk.reasons == ("network: axios.get",)
    assert symbol_at(analysis, "pull").risk.level == "medium"
    assert symbol_at(analysis, "quiet").risk.level == "low"


def test_typescript_interfaces_enums_decorators() -> None:
    source = b"""
import { Injectable } from '@angular/core';
export interface Shape { area(): number; }
export enum Color { Red, Green }
type Id = string;
@Injectable()
export class Service {
  constructor(private readonly http: Http) {}
  @Log() private fetch(id: Id, opts?: Opts): Promise<void> { return this.http.get(id); }
}
"""
    analysis = analyze_source("svc.ts", source)
    kinds = {s.qualified_name: s.kind for s in analysis.symbols}
    assert kinds == {
        "Shape": "interface",
        "Shape.area": "method",
        "Color": "enum",
        "Id": "type",
        "Service": "class",
        "Service.constructor": "method",
        "Service.fetch": "method",
    }
    service = symbol_at(analysis, "Service")
    assert service.decorators == ("Injectable",)
    fetch = symbol_at(analysis, "Service.fetch")
    assert fetch.decorators == ("Log",) and fetch.arity == 2 and fetch.exported is False
    assert analysis.imports[0].module == "@angular/core"


def test_tsx_components() -> None:
    source = b"export function App({ name }: Props) { return <div onClick={() => go(name)}>{name}</div>; }\n"
    analysis = analyze_source("App.tsx", source)
    assert [s.qualified_name for s in analysis.symbols] == ["App"]
    assert analysis.language == "tsx"
    assert [c.name for c in analysis.symbols[0].calls] == ["go"]
