"""A streaming query from the replog records source into Spark's Parquet file sink, until killed.

    python stream_to_parquet.py BOOTSTRAP TOPIC OUT_DIR CHECKPOINT_DIR RECORDS_PER_TRIGGER

The file sink is Spark's idempotent sink: a micro-batch's files count only once its entry is in
OUT_DIR/_spark_metadata, and a batch replayed from the checkpoint after a crash replaces what it
had half-written. Run as a process of its own so that a test can kill it at any moment.
"""

from __future__ import annotations

import sys

from replog.spark import session


def main(bootstrap: str, topic: str, out: str, checkpoint: str, per_trigger: str) -> None:
    spark = session.build("local[2]", "replog stream to parquet", shuffle_partitions=2, driver_memory="512m")
    stream = (spark.readStream.format("replog").option("bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", per_trigger).load())
    query = (stream.select("partition", "offset", "value").writeStream.format("parquet")
             .option("path", out).option("checkpointLocation", checkpoint).trigger(processingTime="500 milliseconds")
             .start())
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:6])
