"""Context packs name the code they carry by the names a user would look for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.orchestrator.core import Orchestrator
from engine.repo.layout import RepoLayout

JULIA = """module Geometry

function scale_point(p, factor)
    factor
end

function Base.show(io::IO, p::Point)
    print(io, p.x)
end

function area(w::T, h::T)::T where {T<:Real}
    w * h
end

end
"""


def _orchestrator(make_repo: Callable[..., Path], files: dict[str, str]) -> Orchestrator:
    layout = RepoLayout.for_path(make_repo(files))
    settings = load_settings(layout.root).settings
    index_repository(layout, settings)
    return Orchestrator(layout, settings)


def test_julia_functions_are_named_by_their_signature_not_their_body(make_repo) -> None:
    orch = _orchestrator(make_repo, {"src/Geometry.jl": JULIA})
    pack = orch.build_context("fix scale_point so the factor multiplies the point", budget=2000)
    symbols = {i.symbol for i in pack.items if i.kind == "source"}
    assert "Geometry.scale_point" in symbols
    names = {i.symbol for i in pack.items if i.symbol}
    # A body's last expression ('factor', 'print', 'T') is never taken for the function's name.
    assert not names & {"Geometry.factor", "Geometry.print", "Geometry.T", "Geometry.w"}
    pack = orch.build_context("where is Base.show for a point defined", budget=2000)
    assert any(i.symbol == "Geometry.Base.show" and "function Base.show" in i.text for i in pack.items)
