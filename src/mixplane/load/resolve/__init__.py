"""From a mixture to its documents: catalog queries per component (`query`), resolved
plans cached per machine (`plan_cache`) or fetched from a `mixplane serve` service
(`plan_service`). Builds on `load.plan`, `load.remote` and `load.read`.
"""
