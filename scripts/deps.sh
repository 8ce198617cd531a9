#!/usr/bin/env bash
# Install every Debian bookworm package perfgroup needs to build, test and demo.
# Idempotent: installs only what is missing. Needs root (or sudo).
#   scripts/deps.sh           everything
#   scripts/deps.sh --base    only what a build without plugins needs (the sanitizer builds:
#                             scripts/test.sh installs the rest in the background meanwhile)
set -euo pipefail
base=(build-essential gcc-12 g++-12 clang-14 cmake pkg-config libmsgpack-dev python3 python3-msgpack
      time file
      libuv1-dev  # tests/tasks: uv_queue_work requests charged to the groups that queued them
      ccache  # scripts/test.sh: the runtime and Clang plugin objects compiled once per run
      ninja-build)  # scripts/test.sh's clang-19-only build and packaging.ninja: CMake's Ninja generator
rest=(gcc-12-plugin-dev libclang-14-dev llvm-14-dev
      gcc-11 g++-11 gcc-11-plugin-dev clang-13 libclang-13-dev llvm-13-dev  # packaging.compilers
      libomp-14-dev  # corpus openmp.c: the one libomp every clang links (libomp-N-dev conflict)
      libasio-dev  # tests/coroutines: a real C++20 coroutine library
      llvm-14-tools libclang-rt-14-dev lld-14
      tmux prometheus prometheus-node-exporter)  # the live tests (perfgroup top, metrics)
pkgs=("${base[@]}")
[ "${1-}" = --base ] || pkgs+=("${rest[@]}")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Debian's prometheus and prometheus-node-exporter packages enable their services on the
# default ports 9090 and 9100: the tests start their own on free ports, so a service started
# by a package is stopped and disabled. Checked every run, installed or not.
stop_prometheus_service() {
  local SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  for svc in prometheus prometheus-node-exporter; do
    if [ -d /run/systemd/system ] && systemctl is-enabled --quiet "$svc" 2>/dev/null; then
      $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
    elif [ -x "/etc/init.d/$svc" ]; then
      $SUDO "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
    fi
  done
}
[ ${#missing[@]} -eq 0 ] && { stop_prometheus_service; exit 0; }
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "perfgroup: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
  --no-install-recommends "${missing[@]}" >/dev/null
stop_prometheus_service
