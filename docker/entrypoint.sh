#!/bin/sh
# The image's entrypoint: run the command as the owner of /workshop/results, with per-user cache folders.
#
# Compose starts it as root (user "0:0") only so that it can take on the uid:gid that owns the bind-mounted
# ./results: every file the workshop writes is then the invoking user's, with no UID/GID to pass in (shells do
# not export UID, so compose could not see it). It drops root with setpriv before running anything; without a
# results mount it becomes the image's own unprivileged user `workshop` (uid 1000). Started as any other
# user (plain `docker run`), it just runs the command.
set -eu

if [ "$(id -u)" = 0 ]; then
  owner=$(stat -c %u:%g /workshop/results 2>/dev/null || echo 1000:1000)
  if [ "$owner" != 0:0 ]; then
    # A learner's workspace that Docker itself just made for the mount (root's, empty) becomes the owner's too.
    work=/workshop/my-work
    if [ -d "$work" ] && [ "$(stat -c %u:%g "$work")" = 0:0 ] && [ -z "$(ls -A "$work")" ]; then
      chown "$owner" "$work"
    fi
    exec setpriv --reuid="${owner%:*}" --regid="${owner#*:}" --clear-groups -- "$0" "$@"
  fi
  python -m workshop.i18n.say entrypoint-root >&2 || true # the text: workshop/i18n/say.py
fi

# One folder per uid on the /cache volume: HOME (matplotlib's config) and the Inductor/Triton caches that
# interactive work reuses (each lab run still compiles into fresh folders of its own: see workshop/harness/runner.py).
uid=$(id -u)
export HOME="/cache/$uid/home" USER="${USER:-workshop}" LOGNAME="${LOGNAME:-workshop}"
export TORCHINDUCTOR_CACHE_DIR="/cache/$uid/inductor" TRITON_CACHE_DIR="/cache/$uid/triton"
mkdir -p "$HOME" "$TORCHINDUCTOR_CACHE_DIR" "$TRITON_CACHE_DIR"
exec "$@"
