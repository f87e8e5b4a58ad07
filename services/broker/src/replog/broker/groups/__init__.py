"""The group coordinator: consumer groups and their committed offsets (issue 43, docs/architecture.md)."""
