"""Personal data: detectors for e-mail, phone, IP and card numbers, and the `pii` stage."""

from mixplane.stages.pii.detectors import KINDS, Span, find_pii, luhn_valid
from mixplane.stages.pii.stage import Pii

__all__ = ["KINDS", "Pii", "Span", "find_pii", "luhn_valid"]
