"""Print the request a fuzz finding names, rebuilt from its seed.

    .venv/bin/python -m tests.fuzz.replay /replog.v1.LogService/Produce 8132874986137389573 \\
        [--context '{"controller_epoch": 3, "broker_epochs": {"1": 40}, ...}']

A mutated request starts from the context of its batch (the finding's report has it); a random one
needs none. The output is protobuf text, for grpcurl or a test.
"""

from __future__ import annotations

import argparse
import json
import sys

from google.protobuf import text_format

from .messages import Context, build
from .targets import all_targets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", help="the method's path, /package.Service/Method")
    parser.add_argument("seed", type=int)
    parser.add_argument("--context", default="{}", help="the batch's context, as the report's JSON has it")
    args = parser.parse_args(argv)
    fields = json.loads(args.context)
    if "broker_epochs" in fields:
        fields["broker_epochs"] = {int(k): v for k, v in fields["broker_epochs"].items()}
    for key in ("broker_ids",):
        if key in fields:
            fields[key] = tuple(fields[key])
    context = Context(**fields)
    found = [t for t in all_targets(["controller-1", "broker-1", "gateway-1"]) if t.path == args.method]
    if not found:
        print(f"no method {args.method}", file=sys.stderr)
        return 2
    kind, message = build(found[0].method.input_type, args.seed, context)
    print(f"# {kind} {message.DESCRIPTOR.full_name} of seed {args.seed}")
    print(text_format.MessageToString(message))
    return 0


if __name__ == "__main__":
    sys.exit(main())
