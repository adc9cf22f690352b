#!/bin/sh
# Installs the Debian packages silt needs to build and test, and only those that are missing.
# `apt-get update` runs once, and only when something has to be installed.
set -eu

PKGS="${SILT_EXTRA_PKGS:-} cmake ninja-build g++ ccache pkg-config \
  libcli11-dev nlohmann-json3-dev doctest-dev zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev \
  libisal-dev libasio-dev libraft-dev libuv1-dev libcpp-httplib-dev \
  kcat python3 python3-confluent-kafka python3-kafka python3-snappy nodejs \
  golang-go golang-github-segmentio-kafka-go-dev"

# kafkajs (tests/interop) installs with npm: Debian's nodejs comes without it, NodeSource's with.
command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
# kafka-node's snappy module (tests/interop) is built against Node's headers: NodeSource's nodejs
# ships them, Debian's are in libnode-dev.
[ -f /usr/include/node/node.h ] || PKGS="$PKGS libnode-dev"

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

echo "deps: installing$missing" >&2
if [ "$(id -u)" != 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
