"""replog admin gateway: the stateless front door for operators and gRPC clients."""
