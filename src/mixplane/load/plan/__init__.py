"""The plan: which sample comes at which position of the stream, and where a run stands.

Pure functions of the mixture and its seed, with no I/O: `ranges` (a component's documents
as ranges over shards), `resolved` (every component's documents, the output of resolution),
`packing` (documents into fixed-length sequences), `samples` (the blended, seeded sample
order: `SamplePlan`), `partition` (ranks and DataLoader workers: `Layout`) and `state`
(the resume position: `LoaderState`). Imports nothing else of `mixplane.load`.
"""
