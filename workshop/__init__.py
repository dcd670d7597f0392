"""The PyTorch Internals Workshop: one operator, the MiniGPT's LM head nn.Linear(64, 600), taken apart."""

__version__ = "0.1.0"
