"""Go rules: methods are named ``Receiver.Method``; exported means capitalised.

Only interprets nodes the Go query captured; the walk is in ``extract.py``.
"""

from __future__ import annotations

from tree_sitter import Node

from engine.semantic.lang_base import DefName, LangRules, text
from engine.semantic.model import ImportRef


def _receiver_type(node: Node, src: bytes) -> str | None:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return None
    for param in receiver.named_children:
        current = param.child_by_field_name("type")
        while current is not None and current.type in ("pointer_type", "generic_type", "parenthesized_type"):
            inner = current.child_by_field_name("type")
            current = (
                inner
                if inner is not None
                else (current.named_children[0] if current.named_children else None)
            )
        if current is not None:
            return text(current, src)
    return None


class GoRules(LangRules):
    name = "go"
    grammar = "go"
    comment_types = frozenset({"comment"})
    call_member_types = {"selector_expression": ("operand", "field")}

    def def_name(self, node: Node, kind: str, src: bytes) -> DefName | None:
        name = node.child_by_field_name("name")
        if name is None:
            return None
        if node.type == "method_declaration":
            owner = _receiver_type(node, src)
            return DefName(text(name, src), "method", owner=owner)
        return DefName(text(name, src), kind)

    def outer_node(self, node: Node) -> Node:
        parent = node.parent
        if (
            node.type == "type_spec"
            and parent is not None
            and parent.type == "type_declaration"
            and parent.named_child_count == 1
        ):
            return parent
        return node

    def signature(self, node: Node, src: bytes) -> str:
        if node.type == "type_spec":
            kind = node.child_by_field_name("type")
            head = f"type {text(node.child_by_field_name('name'), src)}"
            if kind is not None and kind.type in ("struct_type", "interface_type"):
                return head + (" struct" if kind.type == "struct_type" else " interface")
            return super().signature(node, src) if kind is None else f"{head} {text(kind, src)}"[:200]
        return super().signature(node, src)

    def arity(self, node: Node, kind: str, src: bytes) -> int:
        params = node.child_by_field_name("parameters")
        if params is None:
            return 0
        count = 0
        for param in params.named_children:
            if param.type == "parameter_declaration":
                count += max(1, len(param.children_by_field_name("name")))
            elif param.type == "variadic_parameter_declaration":
                count += 1
        return count

    def exported(self, node: Node, name: str, kind: str, src: bytes, qualified: str = "") -> bool:
        return name[:1].isupper()

    def imports(self, node: Node, src: bytes) -> list[ImportRef]:
        path = node.child_by_field_name("path")
        if path is None:
            return []
        module = text(path, src).strip('"`')
        alias_node = node.child_by_field_name("name")
        alias = text(alias_node, src) if alias_node is not None else None
        return [ImportRef(module, (), alias, node.start_point.row + 1)]
