#!/usr/bin/env bash
# Installs what Lattice builds against and what its tests and demo use, when
# missing (Debian/Ubuntu): libsodium, SQLite, Avahi's DNS-SD library, and for the
# simulated LAN (network namespaces, one dbus + avahi-daemon per host) dbus,
# avahi-daemon (and avahi-utils, to advertise by hand), iproute2 and python3, and faketime for clock attacks;
# for the web checks, Chromium with its WebDriver and python3-venv (their Python packages go in .build/web-venv,
# made by Tests/web/run.sh). Nothing is started here.
set -euo pipefail
needed=()
for package in libsodium-dev libsqlite3-dev pkg-config libavahi-compat-libdnssd-dev avahi-daemon avahi-utils dbus iproute2 python3 python3-venv faketime chromium chromium-driver; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || needed+=("$package")
done
if [ ${#needed[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${needed[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${needed[@]}" >/dev/null
fi
