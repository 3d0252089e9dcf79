"""Screens: the main screen (layout, modes, workers), the confirmation and the search results list."""
