#!/bin/sh
# scripts/deps.sh -- make sure the Debian packages shmemlab needs are there.
#
# Quiet and idempotent when everything is installed. With arguments, those
# packages instead of the list below (make bench-peers: libsimgrid-dev).
# Missing packages:
#   as root:   apt-get update (once) + apt-get install -y <missing>
#   otherwise: prints the exact `sudo apt-get install -y ...` line, exits 1.
# Then makes `lua` mean Lua 5.4 (Debian's lua-check pulls in lua5.1, whose
# lua-interpreter alternative has the higher priority).
set -eu

PACKAGES="lua5.4 liblua5.4-dev lua-filesystem lua-busted lua-check lua-cjson
lua-dkjson gcc make pkg-config"
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

# `lua -v` prints to stderr on 5.1 and to stdout on 5.4.
case "$(lua -v 2>&1 || true)" in
  "Lua 5.4"*) ;;
  *)
    if is_root; then
      update-alternatives --set lua-interpreter /usr/bin/lua5.4 >/dev/null
      echo "deps.sh: note: switched the lua-interpreter alternative to /usr/bin/lua5.4 (lua is now Lua 5.4)"
    else
      echo "deps.sh: note: \`lua\` is not Lua 5.4; to fix:" \
        "sudo update-alternatives --set lua-interpreter /usr/bin/lua5.4" >&2
    fi
    ;;
esac
