"""Reading the plan's tokens: shards opened local, cached or by range (`source`,
`range_reads`), sequences assembled in blocks by the compiled kernel (`assemble`), the
shards a plan will read next (`forecast`), and the stream of batches with its read-ahead
thread (`stream`). Builds on `load.plan` and `load.remote`.
"""
