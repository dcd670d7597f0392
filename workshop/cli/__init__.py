"""`python -m workshop`: the command line. main.py builds the parser from the commands of commands.py (list, run,
report, train, bench), learner.py (exercises, check) and instructor.py (grade, edition); options.py holds the
options they share; runs.py starts a run and shows it on the screen. The work is done in workshop.harness and
workshop.grading.
"""
