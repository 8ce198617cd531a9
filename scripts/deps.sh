#!/usr/bin/env bash
# Install every Debian bookworm package perfgroup needs to build, test and demo.
# Idempotent: installs only what is missing. Needs root (or sudo).
set -euo pipefail
pkgs=(build-essential gcc-12 g++-12 gcc-12-plugin-dev clang-14 libclang-14-dev llvm-14-dev
      llvm-14-tools libclang-rt-14-dev lld-14 cmake pkg-config libmsgpack-dev python3 python3-msgpack time file)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
echo "perfgroup: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
