"""PySpark jobs over the topology export and the trace files, and the ``replog`` data source."""


def register(spark) -> None:
    """Register the ``replog`` format on ``spark``: ``spark.read.format("replog")`` and ``readStream``
    (source.py). Sessions built by replog.spark.session have it already."""
    from replog.spark.source import ReplogDataSource

    spark.dataSource.register(ReplogDataSource)
