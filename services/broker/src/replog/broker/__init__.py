"""replog broker: hosts partition replicas; a pure replica core (`core/`) wrapped by thin adapters."""
