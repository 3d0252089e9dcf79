"""Language registry: levels, extensions, path detection, and definitions-level extraction."""

from __future__ import annotations

import pytest

from engine.semantic.extract import analyze_source
from engine.semantic.languages import LanguageInfo, language_for_path, list_languages

FULL = {
    "python",
    "javascript",
    "typescript",
    "tsx",
    "go",
    "rust",
    "java",
    "c",
    "cpp",
    "csharp",
    "ruby",
    "php",
    "kotlin",
    "swift",
    "bash",
}

# One small snippet per definitions-level language, with the symbols it must yield.
DEFINITION_SNIPPETS: dict[str, tuple[str, bytes, list[tuple[str, str]]]] = {
    "lua": (
        "a.lua",
        b"local function helper(a) return a end\nfunction M.run(x) helper(x) end\n",
        [("helper", "function"), ("M.run", "function")],
    ),
    "scala": (
        "a.scala",
        b"class Store { def get(k: String) = k }\ntrait Getter { def get(k: String): String }\n",
        [("Store", "class"), ("Store.get", "method"), ("Getter", "trait"), ("Getter.get", "method")],
    ),
    "elixir": (
        "a.ex",
        b"defmodule Store do\n  def get(key), do: key\n  defp helper(a), do: a\nend\n",
        [("Store", "module"), ("Store.get", "function"), ("Store.helper", "function")],
    ),
    "haskell": (
        "a.hs",
        b"module Main where\ndata Shape = Circle | Square\nrun :: Int -> Int\nrun x = x + 1\n",
        [("Shape", "type"), ("run", "function")],
    ),
    "ocaml": (
        "a.ml",
        b"let run x = x + 1\ntype shape = Circle | Square\n",
        [("run", "function"), ("shape", "type")],
    ),
    "dart": (
        "a.dart",
        b"class Store { String get(String k) { return k; } }\nvoid main() { print(1); }\n",
        [("Store", "class"), ("Store.get", "method"), ("main", "function")],
    ),
    "zig": (
        "a.zig",
        b"const Store = struct { fn get(self: *Store) void {} };\npub fn main() void {}\n",
        [("Store", "struct"), ("Store.get", "method"), ("main", "function")],
    ),
    "julia": (
        "a.jl",
        b"function run(x)\n  x + 1\nend\nstruct Point\n  x::Int\nend\n",
        [("run", "function"), ("Point", "struct")],
    ),
    "r": ("a.R", b"run <- function(x) { x + 1 }\n", [("run", "function")]),
    "objc": (
        "a.m",
        b"@implementation Store\n- (NSString *)get:(NSString *)k { return k; }\n@end\n",
        [("Store", "class"), ("Store.get", "method")],
    ),
    "erlang": ("a.erl", b"-module(store).\nget(K) -> K.\n", [("get", "function")]),
    "elm": (
        "a.elm",
        b"module Main exposing (..)\ntype Shape = Circle | Square\nrun x = x + 1\n",
        [("Shape", "type"), ("run", "function")],
    ),
    "solidity": (
        "a.sol",
        b"contract Store { function get(uint k) public returns (uint) { return k; } }\n",
        [("Store", "class"), ("Store.get", "method")],
    ),
    "clojure": ("a.clj", b"(ns store.core)\n(defn run [x] (+ x 1))\n", [("run", "function")]),
    "fsharp": (
        "a.fs",
        b"module Store\nlet run x = x + 1\ntype Shape = Circle | Square\n",
        [("run", "function"), ("Shape", "type")],
    ),
    "nim": ("a.nim", b"proc run(x: int): int = x + 1\n", [("run", "function")]),
    "d": (
        "a.d",
        b"class Store { int get(int k) { return k; } }\nvoid main() {}\n",
        [("Store", "class"), ("Store.get", "method"), ("main", "function")],
    ),
    "fortran": (
        "a.f90",
        b"module store\ncontains\n  subroutine run(x)\n    integer :: x\n  end subroutine run\nend module store\n",
        [("store", "module"), ("store.run", "function")],
    ),
    "gleam": ("a.gleam", b"pub fn run(x) { x + 1 }\n", [("run", "function")]),
    "hcl": (
        "main.tf",
        b'resource "aws_s3_bucket" "logs" { bucket = "x" }\n',
        [("resource.aws_s3_bucket.logs", "module")],
    ),
    "proto": (
        "a.proto",
        b'syntax = "proto3";\nmessage User { string name = 1; }\nservice Users { rpc Get (User) returns (User); }\n',
        [("User", "struct"), ("Users", "interface"), ("Users.Get", "method")],
    ),
    "graphql": (
        "a.graphql",
        b"type User { name: String }\nquery GetUser { user { name } }\n",
        [("User", "type"), ("GetUser", "function")],
    ),
    "cuda": (
        "k.cu",
        b"__global__ void kern(float *a) { a[0] = 1; }\nstruct P { int x; };\n",
        [("kern", "function"), ("P", "struct")],
    ),
    "arduino": (
        "a.ino",
        b"void setup() { pinMode(1, OUTPUT); }\nvoid loop() {}\n",
        [("setup", "function"), ("loop", "function")],
    ),
    "glsl": (
        "a.frag",
        b"struct Light { vec3 pos; };\nvoid main() { gl_FragColor = vec4(1.0); }\n",
        [("Light", "struct"), ("main", "function")],
    ),
    "hlsl": (
        "a.hlsl",
        b"float4 main(float4 p : POSITION) : SV_TARGET { return p; }\n",
        [("main", "function")],
    ),
    "starlark": ("BUILD", b"def build(ctx):\n    pass\n", [("build", "function")]),
    "powershell": (
        "a.ps1",
        b"function Get-Item { param($a) }\nclass Store { [string] Get() { return 'x' } }\n",
        [("Get-Item", "function"), ("Store", "class"), ("Store.Get", "method")],
    ),
    "cmake": (
        "CMakeLists.txt",
        b"function(my_fn arg)\nendfunction()\nmacro(my_macro)\nendmacro()\n",
        [("my_fn", "function"), ("my_macro", "macro")],
    ),
    "commonlisp": (
        "a.lisp",
        b"(defun run (x) (+ x 1))\n(defmacro m (x) x)\n",
        [("run", "function"), ("m", "function")],
    ),
    "elisp": ("a.el", b"(defun run (x) (+ x 1))\n", [("run", "function")]),
    "tcl": ("a.tcl", b"proc run {x} { return $x }\n", [("run", "function")]),
    "vim": ("a.vim", b"function! Run(x)\n  return a:x\nendfunction\n", [("Run", "function")]),
    "ada": (
        "a.adb",
        b"package body Store is\n   procedure Run (X : Integer) is\n   begin\n      null;\n   end Run;\nend Store;\n",
        [("Store", "module"), ("Store.Run", "function")],
    ),
    "pascal": (
        "a.pas",
        b"program P;\nprocedure Run(x: Integer);\nbegin\nend;\nbegin\nend.\n",
        [("Run", "function")],
    ),
    "haxe": (
        "a.hx",
        b"class Store {\n  public function get(k:String):String { return k; }\n}\n",
        [("Store", "class"), ("Store.get", "method")],
    ),
    "purescript": ("a.purs", b"module Main where\nrun :: Int -> Int\nrun x = x + 1\n", [("run", "function")]),
    "gdscript": (
        "a.gd",
        b"extends Node\nfunc get(k):\n\treturn k\nclass Inner:\n\tfunc m():\n\t\tpass\n",
        [("get", "function"), ("Inner", "class"), ("Inner.m", "method")],
    ),
    "verilog": ("a.sv", b"module counter(input clk);\nendmodule\n", [("counter", "module")]),
    "thrift": (
        "a.thrift",
        b"struct User { 1: string name }\nservice Users { User get(1: string id) }\n",
        [("User", "struct"), ("Users", "interface"), ("Users.get", "method")],
    ),
    "prisma": (
        "schema.prisma",
        b"model User {\n  id Int @id\n}\nenum Role {\n  ADMIN\n}\n",
        [("User", "struct"), ("Role", "enum")],
    ),
    "apex": (
        "A.cls",
        b"public class Store {\n  public String get(String k) { return k; }\n}\n",
        [("Store", "class"), ("Store.get", "method")],
    ),
    "odin": (
        "a.odin",
        b"main :: proc() {\n}\nPoint :: struct { x: int }\n",
        [("main", "function"), ("Point", "struct")],
    ),
    "luau": ("a.luau", b"local function helper(a: number) return a end\n", [("helper", "function")]),
    "squirrel": (
        "a.nut",
        b"function run(x) { return x; }\nclass Store { function get(k) { return k; } }\n",
        [("run", "function"), ("Store", "class"), ("Store.get", "method")],
    ),
}


def test_list_languages_levels() -> None:
    languages = list_languages()
    assert all(isinstance(info, LanguageInfo) for info in languages)
    by_name = {info.name: info for info in languages}
    assert {name for name, info in by_name.items() if info.level == "full"} == FULL
    assert by_name["python"].extensions[0] == ".py"
    assert ".tsx" in by_name["tsx"].extensions
    definitions = {name for name, info in by_name.items() if info.level == "definitions"}
    # Every definitions-level language is listed only because a snippet below proves it works.
    assert definitions == set(DEFINITION_SNIPPETS)
    assert len(by_name) == len(languages)


@pytest.mark.parametrize("language", sorted(DEFINITION_SNIPPETS))
def test_definitions_level_language_yields_definitions(language: str) -> None:
    path, source, expected = DEFINITION_SNIPPETS[language]
    analysis = analyze_source(path, source)
    assert analysis.language == language
    assert [(s.qualified_name, s.kind) for s in analysis.symbols] == expected


@pytest.mark.parametrize(
    ("path", "first_line", "expected"),
    [
        ("src/app.py", None, "python"),
        ("web/App.TSX", None, "tsx"),
        ("lib/x.mjs", None, "javascript"),
        ("include/a.hpp", None, "cpp"),
        ("Rakefile", None, "ruby"),
        ("bin/deploy", b"#!/bin/bash", "bash"),
        ("bin/tool", b"#!/usr/bin/env python3", "python"),
        ("bin/node-tool", b"#!/usr/bin/env node", "javascript"),
        ("README.md", None, None),
        ("data.bin", None, None),
    ],
)
def test_language_for_path(path: str, first_line: bytes | None, expected: str | None) -> None:
    assert language_for_path(path, first_line) == expected


def test_languages_whose_grammar_can_hang_are_not_parsed() -> None:
    # tree-sitter-perl's scanner never returns on this input; Perl files must be skipped, not parsed.
    hang = b'%/&6mdu1-r"!Z5fo4\xff9^!o[o/2`"2f@e#!'
    assert language_for_path("lib/Store.pm") is None
    assert analyze_source("script.pl", hang).symbols == ()
