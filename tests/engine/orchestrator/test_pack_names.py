"""Context packs name the code they carry by the names a user would look for."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.orchestrator.core import Orchestrator
from engine.query.symbols import SymbolIndex
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


def _ring_buffer(try_: str, catch: str, catch_end: str, rethrow: str, noexcept: str) -> str:
    return f"""namespace ring {{

template <class T>
class circular_buffer {{
public:
    pointer linearize() {{
        {try_} {{
            for (pointer first = m_first; dest < src; src = first) {{
                for (size_type ii = 0; src < m_end; ++src, ++dest, ++ii) {{
                    if (moved == size()) {{
                        first = dest;
                        break;
                    }}
                }}
            }}
        }} {catch}(...) {{
            m_last += constructed;
            {rethrow}
        }}
        {catch_end}
        m_first = m_buff;
        return m_buff;
    }}

    circular_buffer(circular_buffer<T>&& cb) {noexcept}
    : m_buff(0), m_end(0), m_first(0), m_last(0), m_size(0) {{
        cb.swap(*this);
    }}

    ~circular_buffer() {noexcept} {{
        destroy();
    }}

    void push_front_impl(T item) {{
        {try_} {{
            if (full()) {{
                decrement(m_first);
            }}
        }} {catch}(...) {{
            increment(m_first);
            {rethrow}
        }}
        {catch_end}
    }}
}};

}}
"""


def _spans(orch: Orchestrator, path: str) -> dict[str, tuple[int, int]]:
    with SymbolIndex(orch.layout) as index:
        return {s.qualified_name: (s.start_line, s.end_line) for s in index.symbols_in_file(path)}


def test_cpp_methods_after_boost_exception_macros_are_found_in_their_class(make_repo) -> None:
    source = _ring_buffer("BOOST_TRY", "BOOST_CATCH", "BOOST_CATCH_END", "BOOST_RETHROW", "BOOST_NOEXCEPT")
    orch = _orchestrator(make_repo, {"include/ring/base.hpp": source})
    pack = orch.build_context("push_front_impl leaves m_first decremented when the copy throws", budget=2000)
    by_symbol = {i.symbol: i for i in pack.items if i.kind == "source"}
    assert "void push_front_impl(T item) {" in by_symbol["circular_buffer.push_front_impl"].text
    assert not any("BOOST_CATCH" in (i.symbol or "") for i in pack.items)  # a macro's block is no method
    spans = _spans(orch, "include/ring/base.hpp")
    assert spans["circular_buffer.linearize"] == (6, 23)
    assert spans["circular_buffer.push_front_impl"] == (34, 44)
    assert "circular_buffer.~circular_buffer" in spans


# Project macros semfora cannot know (no semicolon after PROPAGATE and GUARD_END).
GUARDED_BUFFER = """namespace ring {

template <class T, class Alloc>
class circular_buffer
: private empty_value<Alloc>
{
public:
    typedef T value_type;

    //! Linearize the internal buffer into a continuous array.
    pointer linearize() {
        if (empty())
            return 0;
        pointer src = m_first;
        GUARDED {
            for (pointer first = m_first; dest < src; src = first) {
                replace(src, dest);
            }
        } ON_FAILURE(...) {
            m_last += constructed;
            PROPAGATE
        }
        GUARD_END
        for (src = m_end - constructed; src < m_end; ++src)
            destroy_item(src);
        m_first = m_buff;
        return m_buff;
    }

    //! Is the buffer linearized?
    bool is_linearized() const NO_THROW_SPEC { return m_first < m_last || m_last == m_buff; }

private:
    /*! INTERNAL ONLY */
    template <class ValT>
    void push_front_impl(ValT item) {
        GUARDED {
            if (full()) {
                decrement(m_first);
            } else {
                ++m_size;
            }
        } ON_FAILURE(...) {
            increment(m_first);
            PROPAGATE
        }
        GUARD_END
    }

public:
    void push_back(param_value_type item) {
        push_back_impl<param_value_type>(item);
    }
};

} // namespace ring
"""


def test_a_cpp_function_the_parser_ran_past_ends_at_its_closing_brace(make_repo) -> None:
    orch = _orchestrator(make_repo, {"include/ring/base.hpp": GUARDED_BUFFER})
    # tree-sitter's recovery stretched linearize to the class's last line (53), over the
    # methods after it; the span a pack or a search shows stops at its own closing brace.
    assert _spans(orch, "include/ring/base.hpp")["circular_buffer.linearize"] == (11, 28)


def _php_handler() -> str:
    methods = []
    for n, name in enumerate(
        ["setParseMode", "disableWebPagePreview", "disableNotification", "splitLongMessages", "write"]
    ):
        methods.append(
            f"""
    /**
     * Sets option {n} of the chat handler: see the service's documentation of the option,
     * which lists every value it accepts and what the service does with each of them,
     * and the notes on rate limits that apply when the option is on.
     * @param bool $value the new value of option {n}
     * @return $this
     */
    public function {name}(bool $value = false): self
    {{
        $this->option{n} = $value;
        $this->touched[] = '{name}';
        $this->validate('{name}', $value);
        return $this;
    }}
"""
        )
    sender = """
    /**
     * Sends one chat message through the service's HTTP API.
     * @param string $message the text to send
     */
    protected function send(string $message): void
    {
        $ch = curl_init();
        curl_setopt($ch, CURLOPT_URL, $this->url);
        curl_setopt($ch, CURLOPT_POSTFIELDS, ['text' => $message]);
        $result = curl_exec($ch);
        if ($result === false) {
            throw new RuntimeException('chat message not sent');
        }
    }
"""
    return "<?php\n\nclass ChatHandler extends AbstractHandler\n{" + "".join(methods) + sender + "}\n"


def test_a_class_skeleton_leaves_its_methods_docblocks_to_them(make_repo) -> None:
    orch = _orchestrator(make_repo, {"src/ChatHandler.php": _php_handler()})
    task = "explain how ChatHandler options are set and the chat message sent"
    pack = orch.build_context(task, budget=500)
    skeleton = next(i for i in pack.items if i.symbol == "ChatHandler")
    assert skeleton.kind == "source" and "elided" in skeleton.text
    # The six-line docblocks above the methods are the methods' own, not the skeleton's...
    assert "rate limits" not in skeleton.text
    # ...so the budget they took buys one more method's code.
    sources = {i.symbol for i in pack.items if i.kind == "source"}
    methods = ("send", "splitLongMessages", "setParseMode", "write", "disableNotification")
    assert {f"ChatHandler.{m}" for m in methods} <= sources


def _console_module() -> str:
    args = "\n".join(
        f"        {name} (bool, optional): highlighting of {name} enabled per call, disabled if False."
        for name in ("markup", "emoji", "color", "links", "paths", "numbers", "urls", "reprs", "logs")
    )
    methods = "\n".join(
        f'''
    def {name}(self, value, highlight=None):
        """Render {name} with optional highlighting."""
        text = self._prepare(value)
        if highlight is None:
            highlight = self._highlight
        result = self._apply(text, highlight)
        self._buffer.append(result)
        self._count += 1
        return result
'''
        for name in ("render_markup", "render_emoji", "render_color", "render_links", "render_paths")
    )
    return f'''class Console:
    """A console that prints text.

    Args:
{args}
    """

    def __init__(self, highlight=True):
        self._highlight = highlight
        self._buffer = []
        self._count = 0
{methods}'''


def test_a_class_skeleton_spends_its_room_on_members_not_its_docstring(make_repo) -> None:
    orch = _orchestrator(make_repo, {"console.py": _console_module()})
    pack = orch.build_context(
        "highlighting cannot be enabled per call when the console disabled it", budget=700
    )
    skeleton = next(i for i in pack.items if i.symbol == "Console")
    assert skeleton.kind == "source" and "elided" in skeleton.text
    assert "paths (bool, optional)" not in skeleton.text  # the docstring's Args, past its head
    assert "def render_links(self, value, highlight=None):" in skeleton.text


GZIP = '''class GZipResponder:
    def __init__(self, app, minimum_size):
        self.app = app
        self.minimum_size = minimum_size

    async def send_with_gzip(self, message):
        """Compress the body when it is big enough; say so in the headers."""
        headers = message["headers"]
        if len(message["body"]) >= self.minimum_size:
            headers["Content-Encoding"] = "gzip"
            headers.add_vary_header("Accept-Encoding")
        await self.app(message)
'''

DATASTRUCTURES = '''class URL:
    def components(self):
        """The URL split into scheme, netloc (such as mail.example.com), path and query."""
        return self._components

    def replace(self, **kwargs):
        return URL(self.components._replace(**kwargs))


class Address:
    def com(self):
        return self.host

    def username(self):
        # fixes the encoding of a user name that holds a colon
        return fix(self.user)


def fix(value):
    return value.replace(":", "%3A")
'''


def test_commit_trailers_addresses_and_issue_references_are_not_part_of_the_task(make_repo) -> None:
    orch = _orchestrator(make_repo, {"app/gzip.py": GZIP, "app/datastructures.py": DATASTRUCTURES})
    task = (
        "fix(gzip): Make sure Vary header is always added if a response can be compressed (#2865)\n\n"
        "Co-authored-by: Marcelo Trylesinski <marcelotryle@gmail.com>\n"
        "Signed-off-by: Jo Smith <jo.smith@mail.example.com>\n"
        "Fixes #2864, closes encode/starlette#2860\n"
    )
    pack = orch.build_context(task, budget=2000)
    code = [i for i in pack.items if i.kind == "source"]
    assert code[0].symbol == "GZipResponder.send_with_gzip"
    assert not any("gmail" in i.reason or "example.com" in i.reason for i in pack.items)
    assert not any(i.symbol == "Address.com" for i in pack.items)
    assert not any(i.symbol == "fix" for i in pack.items)  # fix(gzip): is a commit type, not a call
    # "Fixes #2864" names the issue settled, it is no word of the task's
    assert not any("'fixes'" in i.reason for i in pack.items)


def _transport_module() -> str:
    setup = "\n".join(f"    option_{n} = request.options.get('option_{n}', {n})" for n in range(40))
    return f'''def handle_request(request):
    """Run the app for one request and build its response."""
    raw_path = request.url.raw_path
    query = request.url.query
{setup}
    raw_kwargs = {{"stream": []}}

    def send(message):
        if message["type"] == "http.response.start":
            raw_kwargs["status_code"] = message["status"]
            raw_kwargs["headers"] = message["headers"]
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            raw_kwargs["stream"].append(body)
            if not message.get("more_body", False):
                raw_kwargs["complete"] = True

    scope = {{"raw_path": raw_path, "query_string": query}}
    request.app(scope, send)
    return raw_kwargs
'''


def test_a_closure_already_shown_in_its_functions_excerpt_is_not_sent_again(make_repo) -> None:
    orch = _orchestrator(make_repo, {"transport.py": _transport_module()})
    pack = orch.build_context("the response body stream of handle_request and its send closure", budget=1200)
    outer = next(i for i in pack.items if i.symbol == "handle_request")
    assert "elided" in outer.text and 'raw_kwargs["stream"].append(body)' in outer.text
    copies = [i for i in pack.items if 'raw_kwargs["stream"].append(body)' in i.text]
    assert copies == [outer]


ROUTING = """def get_name(endpoint):
    if hasattr(endpoint, "__name__"):
        return endpoint.__name__
    return endpoint.__class__.__name__
"""

NAMING = '''def get_name(obj, fallback="anonymous"):
    """The name of an object or of its class, or the fallback."""
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if name is None and hasattr(obj, "func"):
        name = get_name(obj.func, fallback)
    return name or fallback
'''


def test_a_function_named_with_its_module_is_the_named_one(make_repo) -> None:
    orch = _orchestrator(make_repo, {"app/routing.py": ROUTING, "app/naming.py": NAMING})
    task = "Fix `routing.get_name()` not to assume all routines and partial objects have a `__name__`"
    pack = orch.build_context(task, budget=2000)
    first = next(i for i in pack.items if i.kind == "source")
    assert (first.file, first.symbol) == ("app/routing.py", "get_name")
    assert "named in the task `routing.get_name`" in first.reason
