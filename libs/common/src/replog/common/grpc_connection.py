"""What both ends of a replog gRPC connection agree on: the largest message, and how often clients ping.

The client's channels (channels.py) and the services' servers (grpc_server.py) each build their options
from these; they live here, in a module that imports nothing, so the client wheel ships them without the
server's modules (deploy/packaging/partition.py follows imports).
"""

# Large enough for a fetch response carrying a few MiB of records.
MESSAGE_BYTES_MAX = 64 * 1024 * 1024
# Our clients ping every connection this often, and take it for dead if a ping goes unanswered this
# long (channels.py says why); servers accept pings this often (grpc_server.py).
KEEPALIVE_TIME_MS = 1000
KEEPALIVE_TIMEOUT_MS = 2000
