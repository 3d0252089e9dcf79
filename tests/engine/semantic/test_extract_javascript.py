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


DECLARATIONS = b"""declare namespace ts {
    /** Create a new 'Program' instance. */
    function createProgram(options: CreateProgramOptions): Program;
    function createProgram(rootNames: readonly string[]): Program;
}
declare module "fs-extra" {
    export function copy(src: string, dest: string): Promise<void>;
}
export declare function parse(text: string): Node;
export function format(value: string): string;
export function format(value: number): string;
export function format(value: any): string { return String(value); }
export declare class Printer {
    print(node: Node): string;
    private reset(): void;
}
"""


def test_declaration_files_keep_their_functions_methods_and_modules() -> None:
    """A .d.ts file (every typed npm package ships them) gave no function at all: its functions
    and methods have no body (`function_signature`, `method_signature` in a class), so
    `semfora search createProgram` on the typescript package found only a WebGL method."""
    analysis = analyze_source("lib/typescript.d.ts", DECLARATIONS)
    found = [(s.qualified_name, s.start_line, s.signature) for s in analysis.symbols]
    assert ("ts.createProgram", 3, "function createProgram(options: CreateProgramOptions): Program") in found
    assert ("ts.createProgram", 4, "function createProgram(rootNames: readonly string[]): Program") in found
    assert ("fs-extra", 6, 'module "fs-extra"') in found  # named without its quotes
    assert ("fs-extra.copy", 7, "function copy(src: string, dest: string): Promise<void>") in found
    assert ("parse", 9, "function parse(text: string): Node") in found
    assert [line for name, line, _ in found if name == "format"] == [10, 11, 12]  # overloads and body
    assert ("Printer.print", 14, "print(node: Node): string") in found
    exported = {s.qualified_name: s.exported for s in analysis.symbols}
    assert exported["parse"] and exported["Printer.print"] and not exported["Printer.reset"]
    doc = symbol_at(analysis, "ts.createProgram")
    assert doc is not None and "Create a new 'Program' instance" in doc.doc


INSTANCE_METHODS = b"""class WebGLRenderer {
  constructor(parameters = {}) {
    this.setPixelRatio = function (value) {
      this.setSize(value, value);
    };
    this.setSize = function (width, height) {};
    this.onTick = () => { this.render(); };
  }
  render() {}
}
function Camera() {
  this.lookAt = function (target) { return target; };
}
var Light = function () {
  this.shine = function () {};
};
function make() {
  const local = { step() {} };
}
"""


def test_methods_a_constructor_sets_on_this_belong_to_its_class() -> None:
    """three.js defines WebGLRenderer's API in its constructor (`this.setPixelRatio = function`):
    the symbols were named `this.setPixelRatio`, so a search for the renderer's method, or a
    caller of it, never met the class."""
    analysis = analyze_source("src/renderers/WebGLRenderer.js", INSTANCE_METHODS)
    found = {s.qualified_name: (s.kind, s.parent, s.exported) for s in analysis.symbols}
    assert found["WebGLRenderer.setPixelRatio"] == ("method", "WebGLRenderer", True)
    assert found["WebGLRenderer.setSize"] == ("method", "WebGLRenderer", True)
    assert found["WebGLRenderer.onTick"] == ("method", "WebGLRenderer", True)  # an arrow keeps `this`
    assert found["Camera.lookAt"] == ("method", "Camera", True)
    assert found["Light.shine"] == ("method", "Light", True)
    assert found["local.step"][2] is False  # an object inside a function stays local to it
    assert not any(name.startswith("this.") for name in found)
    pixel = symbol_at(analysis, "WebGLRenderer.setPixelRatio")
    assert pixel is not None and [(c.receiver, c.name) for c in pixel.calls] == [("this", "setSize")]


def test_names_exported_by_list_are_exported() -> None:
    """three.js writes `class MeshStandardMaterial extends Material {}` and exports it at the
    end with `export { MeshStandardMaterial }`: none of its classes counted as public, so the
    overview gave src/materials/ no purpose and a removed class was no API change."""
    source = (
        b"class Material {}\nfunction helper() {}\nconst make = () => new Material();\nfunction hidden() {}\n"
        b"export { Material, helper as util };\nexport default make;\nexport { other } from './other.js';\n"
    )
    exported = {
        s.qualified_name: s.exported for s in analyze_source("src/materials/Material.js", source).symbols
    }
    assert exported == {"Material": True, "helper": True, "make": True, "hidden": False}


def test_names_a_commonjs_module_exports_are_exported() -> None:
    """`function Router() {}` then `module.exports = Router` (express's lib/router) is the
    module's public API; so are the names of `module.exports = { a, bee: b }` and `exports.d = d`."""
    source = (
        b"function a() {}\nfunction b() {}\nclass C {}\nfunction hidden() {}\nfunction d() {}\n"
        b"function Router() {}\nmodule.exports = { a, bee: b };\nmodule.exports.C = C;\nexports.d = d;\n"
        b"module.exports = Router;\n"
    )
    symbols = analyze_source("lib/router/index.js", source).symbols
    exported = {
        s.qualified_name: s.exported
        for s in symbols
        if not s.qualified_name.startswith(("module.", "exports."))
    }
    assert exported == {"a": True, "b": True, "C": True, "hidden": False, "d": True, "Router": True}


def test_an_anonymous_default_export_is_a_symbol_named_default() -> None:
    # axios lib/adapters/xhr.js: ``export default isXHRAdapterSupported && function (config) {...}``
    # held the whole adapter, and no symbol did: search and `semfora ci` never read it.
    forms = {
        "lib/adapters/xhr.js": b"export default isSupported && function (config) {\n  return send(config);\n}\n",
        "lib/plain.js": b"export default function (config) {\n  return config;\n}\n",
        "lib/arrow.ts": b"export default (config: Config): Config => {\n  return config;\n};\n",
        "lib/klass.js": b"export default class {\n  run() { return 1; }\n}\n",
    }
    for path, source in forms.items():
        symbols = analyze_source(path, source).symbols
        assert [s.qualified_name for s in symbols][:1] == ["default"], path
        assert (symbols[0].start_line, symbols[0].end_line) == (1, 3), path
    [_, method] = analyze_source("lib/klass.js", forms["lib/klass.js"]).symbols
    assert method.qualified_name == "default.run"
    # A named default export keeps its own name; an anonymous function elsewhere is no definition.
    named = b"export default function adapter(config) {\n  return config;\n}\nrun(function () {});\n"
    assert [s.qualified_name for s in analyze_source("lib/named.js", named).symbols] == ["adapter"]
