"""Adaptive feedback from the training loop: `Feedback.observe` (`feedback`), the checks on
what it is given (`loss_checks`, `micro_batches`), the per-component sums every rank adds
up (`step_sums`) and the JSON Lines weight log (`weight_log`).
"""
