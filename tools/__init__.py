"""Tools for the workshop's developers, not for learners: `python -m tools --help`."""
