"""replog controller: one active controller elects leaders and drives replicas (DESIGN §5)."""
