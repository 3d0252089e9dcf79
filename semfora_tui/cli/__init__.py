"""The `semfora` command line: argument parsing, dispatch, and error reporting."""
