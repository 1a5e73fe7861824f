"""Copying folders to and from the cluster's S3 server, run on a host of the cluster.

    python -m cluster.objects put LOCAL_FOLDER s3://BUCKET/PREFIX
    python -m cluster.objects get s3://BUCKET/PREFIX LOCAL_FOLDER

The endpoint is the environment's AWS_ENDPOINT_URL (as `machines.Cluster.env` sets it).
"""

from __future__ import annotations

import sys

import s3fs


def main(action: str, source: str, target: str) -> None:
    fs = s3fs.S3FileSystem()
    if action == "put":
        fs.put(source.rstrip("/") + "/", target.removeprefix("s3://"), recursive=True)
    elif action == "get":
        fs.get(source.removeprefix("s3://").rstrip("/") + "/", target, recursive=True)
    else:
        sys.exit(f"unknown action {action!r}: put or get")


if __name__ == "__main__":
    main(*sys.argv[1:4])
