"""How the dispatcher lab's exercises are graded: their declarations (exercises.py), the mistakes a wrong slot or
chain shows (wrong_decisions.py), the probes that run beside the learner's code in the worker (probes.py), and
the instructor's PREDICTIONS and ANSWERS (reference_answers.py). The lab (lab.py) measures what they are graded
against; the one engine (workshop/engine.py) grades them."""
