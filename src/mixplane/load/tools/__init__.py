"""Tools around the loader: Megatron export (`export`), a mixture's preview (`preview`),
synthetic tokenized datasets for tests and benchmarks (`synthetic`) and a job's telemetry
for `mixplane serve` and Prometheus (`telemetry`).
"""
