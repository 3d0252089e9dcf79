"""Ruby, PHP and Bash rules: names, receivers, require/use/source imports, visibility.

Ruby methods are public unless they follow a bare ``private``/``protected`` line in their
class body or are wrapped as ``private def ...``. PHP members without a visibility
modifier are public. Bash has no visibility.
"""

from __future__ import annotations

from tree_sitter import Node

from engine.semantic.lang_base import DefName, LangRules, short_text, text
from engine.semantic.model import ImportRef

_HIDING = frozenset({"private", "protected"})
_VISIBILITY = _HIDING | {"public"}
_STRING_TYPES = frozenset({"string", "encapsed_string", "raw_string", "word", "string_literal"})


def _unquote(value: str) -> str:
    return value.strip().strip("'\"")


class RubyRules(LangRules):
    name = "ruby"
    grammar = "ruby"
    comment_types = frozenset({"comment"})
    call_function_field = "method"
    module_members_are_methods = True  # a module's ``def`` is a mixin's instance method

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        name = node.child_by_field_name("name")
        if name is None:
            return None
        value = text(name, src)
        if node.type in ("class", "module") and "::" in value:
            owner, _, value = value.rpartition("::")
            return DefName(value, kind, owner=owner.replace("::", "."))
        return DefName(value, kind)

    def signature(self, node: Node, src: bytes) -> str:
        from engine.semantic.lang_base import collapse

        return collapse(text(node, src).split("\n", 1)[0])

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        if node.type != "method":
            return True
        parent = node.parent
        if parent is not None and parent.type == "argument_list":  # private def x ... end
            call = parent.parent
            method = call.child_by_field_name("method") if call is not None else None
            return method is None or text(method, src) not in _HIDING
        prev = node.prev_named_sibling
        while prev is not None:
            if prev.type == "identifier" and text(prev, src) in _VISIBILITY:
                return text(prev, src) == "public"
            prev = prev.prev_named_sibling
        return True

    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        method = node.child_by_field_name("method")
        if method is None:
            return None
        return text(method, src), short_text(node.child_by_field_name("receiver"), src)

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        args = node.child_by_field_name("arguments")
        if args is None or args.named_child_count == 0:
            return []
        first = args.named_children[0]
        if first.type != "string":
            return []
        return [ImportRef(_unquote(text(first, src)), (), None, node.start_point.row + 1)]


class PhpRules(LangRules):
    name = "php"
    grammar = "php"
    comment_types = frozenset({"comment"})
    call_name_types = frozenset({"name", "qualified_name"})

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        for child in node.children:
            if child.type == "visibility_modifier":
                return text(child, src) == "public"
        return True

    def decorators(self, node: Node, src: bytes) -> tuple[str, ...]:
        out: list[str] = []
        for child in node.children:
            if child.type == "attribute_list":
                for group in child.named_children:
                    out.extend(
                        text(a.child_by_field_name("name") or a, src).split("(", 1)[0]
                        for a in group.named_children
                        if a.type == "attribute"
                    )
        return tuple(out)

    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        kind = node.type
        if kind == "function_call_expression":
            func = node.child_by_field_name("function")
            if func is None or func.type not in self.call_name_types:
                return None
            full = text(func, src).lstrip("\\")
            scope, _, name = full.rpartition("\\")
            return name, scope or None
        if kind == "object_creation_expression":
            target = next((c for c in node.named_children if c.type in ("name", "qualified_name")), None)
            return (text(target, src).rsplit("\\", 1)[-1], None) if target is not None else None
        method = node.child_by_field_name("name")
        if method is None:
            return None
        receiver_field = "scope" if kind == "scoped_call_expression" else "object"
        return text(method, src), short_text(node.child_by_field_name(receiver_field), src)

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        line = node.start_point.row + 1
        if node.type != "namespace_use_declaration":
            target = node.named_children[0] if node.named_children else None
            if target is None:
                return []
            strings = (
                [target]
                if target.type in _STRING_TYPES
                else [c for c in target.named_children if c.type in _STRING_TYPES]
            )
            module = _unquote(text(strings[-1], src)) if strings else text(target, src)
            return [ImportRef(module, (), None, line)]
        out: list[ImportRef] = []
        prefix_node = next((c for c in node.named_children if c.type == "namespace_name"), None)
        prefix = text(prefix_node, src) + "\\" if prefix_node is not None else ""
        clauses = [c for c in node.named_children if c.type == "namespace_use_clause"]
        group = next((c for c in node.named_children if c.type == "namespace_use_group"), None)
        if group is not None:
            clauses += [
                c
                for c in group.named_children
                if c.type in ("namespace_use_clause", "namespace_use_group_clause")
            ]
        for clause in clauses:
            alias_node = clause.child_by_field_name("alias")
            target = next(
                (
                    c
                    for c in clause.named_children
                    if c != alias_node and c.type in ("qualified_name", "name", "namespace_name")
                ),
                None,
            )
            if target is None:
                continue
            full = (prefix + text(target, src)).lstrip("\\")
            module, _, name = full.rpartition("\\")
            alias = text(alias_node, src) if alias_node is not None else None
            out.append(ImportRef(module or full, (name,) if module else (), alias, line))
        return out


class BashRules(LangRules):
    name = "bash"
    grammar = "bash"
    comment_types = frozenset({"comment"})

    def signature(self, node: Node, src: bytes) -> str:
        name = text(node.child_by_field_name("name"), src)
        return f"{name}()"

    def call_parts(self, node: Node, src: bytes) -> tuple[str, str | None] | None:
        name = node.child_by_field_name("name")
        if name is None:
            return None
        value = text(name, src)
        if not value or value.startswith("$"):
            return None
        return value, None

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        arg = node.child_by_field_name("argument")
        if arg is None:
            return []
        return [ImportRef(_unquote(text(arg, src)), (), None, node.start_point.row + 1)]
