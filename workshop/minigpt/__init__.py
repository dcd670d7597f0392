"""The grammar MiniGPT: grammar and vocabulary, model, data, training, checkpoint, evaluation."""

from pathlib import Path

# Here, not in checkpoint.py, so that a run's parent and its labs' processes use them without importing torch.
# The trained MiniGPT every lab loads unless --checkpoint names another; the manifest names it and its hash.
SHIPPED_CHECKPOINT = Path(__file__).with_name("minigpt.pt")
# How --checkpoint reaches the processes a lab starts (torchrun's ranks): the lab's process sets it.
CHECKPOINT_ENVIRONMENT = "WORKSHOP_CHECKPOINT"
