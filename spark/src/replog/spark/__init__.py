"""PySpark jobs over the topology export and the trace files."""
