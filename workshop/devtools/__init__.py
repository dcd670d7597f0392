"""Tools for the workshop's developers, not for learners: `python -m workshop.devtools --help`."""
