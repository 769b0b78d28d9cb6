"""`python -m gateway.audit verify|export|purge`: check, export or trim the audit trail.

    python -m gateway.audit verify [--expect-head SEQ:HASH]   exit 0 if intact, 1 with the problem
    python -m gateway.audit export [--since ISO] > audit.jsonl
    python -m gateway.audit purge [--retention-days N]        (default AUDIT_RETENTION_DAYS)

The database is GATEWAY_DATABASE_URL (or --database-url), as the gateway uses it.
`verify` prints the head (last seq and hash): keep it elsewhere and pass it back with
--expect-head to detect records deleted from the end of the chain.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from gateway.audit.store import AuditStore
from gateway.database import make_engine

DEFAULT_URL = "sqlite:///var/gateway/gateway.sqlite3"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway.audit", description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("GATEWAY_DATABASE_URL", DEFAULT_URL))
    sub = parser.add_subparsers(dest="command", required=True)
    verify = sub.add_parser("verify", help="recompute every hash and link")
    verify.add_argument("--expect-head", default="", help="SEQ:HASH printed by an earlier verify")
    export = sub.add_parser("export", help="JSON lines on stdout")
    export.add_argument("--since", default="")
    purge = sub.add_parser("purge", help="delete records older than the retention period")
    purge.add_argument(
        "--retention-days", type=int, default=int(os.environ.get("AUDIT_RETENTION_DAYS", "3650"))
    )
    args = parser.parse_args(argv)

    store = AuditStore(make_engine(args.database_url))
    if args.command == "verify":
        head = None
        if args.expect_head:
            seq, _, digest = args.expect_head.partition(":")
            head = (int(seq), digest)
        result = store.verify(head)
        if result.ok:
            print(
                f"audit trail intact: {result.checked} records checked; "
                f"head {result.head_seq}:{result.head_hash}"
            )
            return 0
        print(f"audit trail BROKEN after {result.checked} good records: {result.problem}", file=sys.stderr)
        return 1
    if args.command == "export":
        for _, raw, _, digest in store.iter_all(since=args.since or None):
            record = json.loads(raw)
            if args.since and record.get("ts", "") < args.since:
                continue
            sys.stdout.write(json.dumps({**record, "hash": digest}, sort_keys=True) + "\n")
        return 0
    removed = store.purge(args.retention_days)
    print(f"removed {removed} audit records older than {args.retention_days} days")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
