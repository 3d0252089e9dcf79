"""Modal screens: confirmation, the `@` picker and the search results list."""
