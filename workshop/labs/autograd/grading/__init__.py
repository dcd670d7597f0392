"""How the autograd lab grades the learner's exercises: their declarations, the diagnoses, the facts the learner's
ANSWERS are graded against, the probes that run beside the learner's code in the worker, and the model answers."""
