"""A Confluent-compatible schema registry whose state is the ``_schemas`` topic (see NOTES.md)."""
