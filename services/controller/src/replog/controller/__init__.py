"""replog controller: one active controller elects leaders and drives replicas.

docs/architecture.md, "Control flow", tells how."""
