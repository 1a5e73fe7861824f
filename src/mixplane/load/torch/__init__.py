"""The PyTorch adapter: `torch_loader` and the DataLoader that follows what the training
loop receives (`adapter`), and how a worker's batches reach the training process
(`transfer`). The only part of the text loader that imports torch.

Example:
    >>> from mixplane.load.torch import torch_loader
    >>> loader = torch_loader(dataset, batch_size=8, num_workers=2)  # doctest: +SKIP
"""

from mixplane.load.torch.adapter import torch_loader

__all__ = ["torch_loader"]
