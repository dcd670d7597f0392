"""How the dispatcher lab grades the learner's exercises: their declarations, the decisions and facts they are
graded against, the probes that run beside the learner's code in the worker, and the model answers."""
