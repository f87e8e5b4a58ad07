"""One module per kind of event; each handler reads and writes through a PlanBuilder."""
