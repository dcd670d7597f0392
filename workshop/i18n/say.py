"""The messages of the shell scripts (docker/session.sh, docker/entrypoint.sh, slurm/distributed.sbatch), in the
language of the environment (WORKSHOP_LANG, else the locale: workshop/i18n), from the package's catalog:

    python -m workshop.i18n.say KEY [NAME=VALUE ...]     # one line on stdout: the message, its {NAME}s filled in

A script keeps no text of its own: the message is declared here once, and translated like every other.
"""

from __future__ import annotations

import sys

from workshop import i18n
from workshop.i18n import N_, _

MESSAGES = {
    "session-interrupted": N_("workshop-session: interrupted; nothing more runs"),
    "session-no-run": N_("workshop-session: the run wrote no run folder (see above)"),
    "session-some-labs": N_(
        "workshop-session: ran only {labs}; the tests check a run of every lab, so they were not run"
    ),
    "session-testing": N_("workshop-session: testing the run in {run}"),
    "entrypoint-root": N_("workshop: ./results is owned by root, so the workshop runs as root"),
    "slurm-job": N_(
        "job {job}: {tasks} torchrun agents on {nodes}, world size {world}, rendezvous at {endpoint}"
    ),
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in MESSAGES:
        print(
            f"usage: python -m workshop.i18n.say {{{','.join(MESSAGES)}}} [NAME=VALUE ...]",
            file=sys.stderr,
        )
        return 2
    key, *pairs = argv
    i18n.set_language(None)
    print(_(MESSAGES[key]).format(**dict(pair.split("=", 1) for pair in pairs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
