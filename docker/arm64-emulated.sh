#!/usr/bin/env bash
# Build the workshop image for linux/arm64 (Docker Desktop on Apple Silicon, arm64 Linux servers) on an x86-64
# Linux machine, under QEMU user-mode emulation, and run labs in it: the check that the image works on arm64.
#
#   sudo bash docker/arm64-emulated.sh [LAB ...]      # default labs: minigpt autograd; from the repository root
#
# Writes benchmarks/arm64-qemu/record.md (what ran, versions, each step's time) and the run's manifest.json and
# each lab's result.json and summary.md. Too slow for CI (benchmarks/arm64-qemu/README.md: base and build took
# about 48 minutes); run it by hand after changing docker/Dockerfile or requirements-pinned.txt.
#
# Steps, each skipped when already done:
#  1. QEMU: Debian's qemu-user-static 10 (bookworm-backports: 7.2 crashes at `import torch`), registered in
#     binfmt_misc with the F flag (the kernel keeps the emulator open, so it runs arm64 binaries in containers);
#  2. the base image for arm64: pulled (python:3.11-slim-bookworm, platform linux/arm64) where a registry is
#     reachable, else a local stand-in like the one ../shared/ci/docker-offline.sh makes for the host's
#     architecture (debootstrap --arch arm64 bookworm, Python 3.11 with venv, pip and headers);
#  3. docker build --platform linux/arm64 of docker/Dockerfile, as it is but for BASE_IMAGE naming that base;
#  4. the labs in the image on the CPU, with no network, as `docker compose up workshop-cpu` runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${BASE_IMAGE_ARM64:-python:3.11-slim-bookworm-arm64}  # a local name: the amd64 base keeps its own tag
IMAGE=${WORKSHOP_IMAGE_ARM64:-pytorch-internals-workshop:arm64}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
RECORD=benchmarks/arm64-qemu
labs=("$@")
[ ${#labs[@]} -gt 0 ] || labs=(minigpt autograd)
log() { echo "[arm64] $*" >&2; }
declare -A took
timed() {  # timed NAME COMMAND...: run it, keep its wall time in took[NAME]
  local name=$1 start=$SECONDS
  shift
  "$@"
  took[$name]=$((SECONDS - start))
  log "$name: ${took[$name]} s"
}

qemu_major() { qemu-aarch64-static --version 2>/dev/null | sed -n 's/.*version \([0-9]*\).*/\1/p' | head -n 1; }

enable_qemu() {
  # QEMU 7.2 (Debian 12's own) kills `import torch` (SIGSEGV in oneDNN's CPU probe); 10.0 from bookworm-backports
  # runs it. The F flag pins the emulator binary at registration, so an upgrade registers it again.
  if [ "$(qemu_major)" -lt 8 ] 2>/dev/null || ! command -v qemu-aarch64-static >/dev/null; then
    echo "deb $MIRROR bookworm-backports main" >/etc/apt/sources.list.d/workshop-backports.list
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports qemu-user-static >/dev/null
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] && echo -1 >/proc/sys/fs/binfmt_misc/qemu-aarch64
  fi
  [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || /lib/systemd/systemd-binfmt /usr/lib/binfmt.d/qemu-aarch64.conf
  grep -q '^flags:.*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 || {
    log "qemu-aarch64 is registered without the F flag: containers could not find the emulator"
    exit 1
  }
}

base_image() {
  if docker image inspect "$BASE" >/dev/null 2>&1; then
    log "$BASE exists (made $(docker image inspect "$BASE" --format '{{.Created}}'))"
    return
  fi
  if docker pull --platform linux/arm64 python:3.11-slim-bookworm >/dev/null 2>&1; then
    docker tag python:3.11-slim-bookworm "$BASE"
    return
  fi
  log "no registry: building a local arm64 stand-in for python:3.11-slim-bookworm with debootstrap"
  command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
  local root
  root=$(mktemp -d -t standin-arm64.XXXXXX)
  trap 'umount "'"$root"'/proc" 2>/dev/null || true; rm -rf "'"$root"'"' EXIT
  debootstrap --arch=arm64 --variant=minbase bookworm "$root" "$MIRROR" >"$root.debootstrap.log" 2>&1
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s-security bookworm-security main\n' \
    "$MIRROR" "$MIRROR" "$MIRROR" >"$root/etc/apt/sources.list"
  mount -t proc proc "$root/proc"
  chroot "$root" apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -qq --no-install-recommends \
    python3 python3-venv python3-pip python3-dev ca-certificates >/dev/null
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
  chroot "$root" update-ca-certificates >/dev/null 2>&1 || true
  chroot "$root" apt-get clean
  umount "$root/proc"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
  ln -sf python3 "$root/usr/bin/python"
  ln -sf pip3 "$root/usr/bin/pip"
  tar -C "$root" -c . | image_from_rootfs
  rm -rf "$root" "$root.debootstrap.log"
  trap - EXIT
}

image_from_rootfs() {  # a tar of a root filesystem on stdin -> the image $BASE, marked linux/arm64
  # Not `docker import`: Docker 20.10 ignores its --platform, and an image marked amd64 makes every later build
  # step for arm64 fail ("does not match the specified platform"). A build FROM scratch keeps the platform.
  local ctx
  ctx=$(mktemp -d -t standin-ctx.XXXXXX)
  cat >"$ctx/rootfs.tar"
  cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
ADD rootfs.tar /
ENV LANG=C.UTF-8 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
CMD ["python3"]
DOCKERFILE
  docker build -q --network none --platform linux/arm64 -t "$BASE" "$ctx" >/dev/null
  rm -rf "$ctx"
}

build() {
  docker build --network host --platform linux/arm64 --build-arg BASE_IMAGE="$BASE" \
    --build-arg GIT_REVISION="$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    -f docker/Dockerfile -t "$IMAGE" .
}

run_labs() {  # the labs on the CPU, no network, results into a fresh folder owned by an unprivileged uid
  results=$(mktemp -d -t arm64-results.XXXXXX)
  chown 4242:4242 "$results"
  docker run --rm --platform linux/arm64 --network none --user 0:0 -e WORKSHOP_DEVICE=cpu \
    -v "$results:/workshop/results" "$IMAGE" workshop-session "${labs[@]}"
}

record() {
  local run
  run=$(readlink -f "$results/latest")
  rm -rf "$RECORD"
  mkdir -p "$RECORD"
  cp "$run/manifest.json" "$RECORD/"
  for lab in "${labs[@]}"; do
    mkdir -p "$RECORD/$lab"
    cp "$run/$lab/result.json" "$run/$lab/summary.md" "$RECORD/$lab/"
  done
  docker run --rm --platform linux/arm64 --network none --entrypoint sh "$IMAGE" -c \
    'uname -m; python -c "import platform, torch, triton; print(platform.machine(), \"torch\", torch.__version__, \"CUDA\", torch.version.cuda, \"triton\", triton.__version__)"' \
    >"$RECORD/versions.txt"
  {
    echo "# The image on linux/arm64 under QEMU emulation: $(date -u +%Y-%m-%d)"
    echo
    echo "\`sudo bash docker/arm64-emulated.sh ${labs[*]}\` on an x86-64 host ($(nproc) cores, $(uname -r)), QEMU"
    echo "$(qemu-aarch64-static --version | head -n 1 | sed 's/ (.*//'), Docker $(docker version --format '{{.Server.Version}}')."
    echo
    echo "| step | wall time |"
    echo "|---|---|"
    for step in qemu base build labs; do echo "| $step | ${took[$step]:-skipped} s |"; done
    echo
    echo "Image $IMAGE: $(docker image inspect "$IMAGE" --format '{{.Architecture}}, {{.Size}}' | awk -F', ' '{printf "%s, %.1f GB", $1, $2/1e9}')."
    echo "Inside it (\`uname -m\`, then Python's view): $(tr '\n' ' ' <"$RECORD/versions.txt")"
    echo
    echo "| lab | passed | checks | lab time (emulated) |"
    echo "|---|---|---|---|"
    for lab in "${labs[@]}"; do
      python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
print(f"| {r[\"lab\"]} | {r[\"passed\"]} | {sum(c[\"passed\"] for c in r[\"checks\"])}/{len(r[\"checks\"])} | {r[\"duration_s\"]:.0f} s |")' \
        "$RECORD/$lab/result.json"
    done
  } >"$RECORD/record.md"
  log "wrote $RECORD/record.md"
}

timed qemu enable_qemu
timed base base_image
timed build build
status=0
timed labs run_labs || status=$?
record
exit $status
