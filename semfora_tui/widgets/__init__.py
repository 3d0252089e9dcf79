"""The app's widgets: one concept per module, each posting its own messages."""
