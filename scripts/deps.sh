#!/bin/sh
# scripts/deps.sh -- make sure the Debian packages shmemlab needs are there.
#
# Quiet and idempotent when everything is installed. With arguments, those
# packages instead of the list below (make bench-peers: libsimgrid-dev).
# Missing packages:
#   as root:   apt-get update (once) + apt-get install -y <missing>
#   otherwise: prints the exact `sudo apt-get install -y ...` line, exits 1.
# It changes nothing else on the system: in particular it leaves the
# lua-interpreter alternative alone (the build and the tests run lua5.4 by name;
# run_op.lua re-runs itself under lua5.4 when `lua` is Debian's 5.1).
set -eu

PACKAGES="lua5.4 liblua5.4-dev lua-filesystem lua-busted lua-check lua-cjson lua-argparse
lua-dkjson gcc make pkg-config valgrind openmpi-bin"
[ $# -eq 0 ] || PACKAGES="$*"

is_root() { [ "$(id -u)" -eq 0 ]; }

missing=""
for p in $PACKAGES; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing="$missing $p"
done
missing=${missing# }

if [ -n "$missing" ]; then
  if is_root; then
    echo "deps.sh: installing: $missing"
    apt-get update
    # shellcheck disable=SC2086 # word splitting of the package list is wanted
    DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
  else
    echo "deps.sh: missing Debian packages; run:" >&2
    echo "sudo apt-get install -y $missing" >&2
    exit 1
  fi
fi
