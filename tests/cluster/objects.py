"""Copying folders to and from the cluster's S3 server, run on a host of the cluster.

    python -m cluster.objects put LOCAL_FOLDER s3://BUCKET/PREFIX [LOCAL_FOLDER URL ...]
    python -m cluster.objects get s3://BUCKET/PREFIX LOCAL_FOLDER [URL LOCAL_FOLDER ...]

The endpoint is the environment's AWS_ENDPOINT_URL (as `machines.Cluster.env` sets it).
"""

from __future__ import annotations

import sys

import s3fs


def main(action: str, *pairs: str) -> None:
    fs = s3fs.S3FileSystem()
    for source, target in zip(pairs[::2], pairs[1::2], strict=True):
        if action == "put":
            fs.put(source.rstrip("/") + "/", target.removeprefix("s3://"), recursive=True)
        elif action == "get":
            fs.get(source.removeprefix("s3://").rstrip("/") + "/", target, recursive=True)
        else:
            sys.exit(f"unknown action {action!r}: put or get")


if __name__ == "__main__":
    main(*sys.argv[1:])
