"""Remote files on the machine: the copy of a remote catalog (`catalog_copy`) and the node
cache of token and image shards (`shard_cache`); where the cache lives is
`mixplane.io.machine_cache`.

Three kinds of remote file are copied to the machine, and each has its own cache because
what makes each correct differs:

- the catalog (`catalog_copy`): one object that is replaced when a dataset is registered;
  a HEAD per start decides whether the copy is current, and the copy is named by its
  content hash, which keys the plan cache;
- shard metadata (`mixplane.catalog.mirror`, in the catalog layer because catalog queries
  over object storage use it without any loader): immutable files of a registered version,
  small, copied whole and kept, with nothing to evict;
- token and image shards (`shard_cache`): large, bounded by a byte limit, pinned while
  read and evicted by the loader's own knowledge of when each file is next read.

What they share is written once, in `mixplane.io`: the file locks that let one process of
the machine copy while the others wait (`io.locks`), atomic writes and the removal of a
killed copier's leftovers (`io.atomic`), checked whole reads with retries (`io.retry`).
Imports nothing else of `mixplane.load`.
"""
