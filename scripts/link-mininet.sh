#!/bin/sh
# Make Debian's Mininet (installed for the system python3) importable from the
# project's venv, without exposing the rest of the system's site-packages.
set -e
venv="$1"
src=$(/usr/bin/python3 -c 'import mininet, os; print(os.path.dirname(mininet.__file__))' 2>/dev/null) || {
    echo "link-mininet: Debian's mininet is not installed; Mininet tests will skip" >&2
    exit 0
}
mkdir -p "$venv/debian-mininet"
ln -sfn "$src" "$venv/debian-mininet/mininet"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
(cd "$venv/debian-mininet" && pwd) > "$site/debian-mininet.pth"
