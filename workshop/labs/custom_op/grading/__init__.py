"""The custom_op lab's grading: its exercises, the checks of each piece and of the op made of a run's pieces, and
the probes that run a learner's code."""
