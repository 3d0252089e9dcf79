; JSX (JavaScript and TSX): a rendered component counts as a call to it.
(jsx_opening_element name: (_)) @call
(jsx_self_closing_element name: (_)) @call
