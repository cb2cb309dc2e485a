#!/usr/bin/env bash
# Put ews on a board: the package from dist/board, the cluster config, the board's id, a systemd
# unit, the `ews` user and the `ews` command. Run as root on the board (or with --root DIR to lay
# it out under DIR, e.g. a mounted image: the user is then written into DIR/etc/passwd and group).
# Needs on the board: Node 20+, and with a cluster VIP `ip` (iproute2) and `arping` (iputils-arping).
#   deploy/install.sh --config cluster.json --board ews1 [--node PATH] [--host-node PATH] [--root DIR] [--no-start]
# Two Nodes: --host-node runs the checks here (default: the node on PATH); --node is the board's,
# the path the unit and the `ews` command name (default: the host's when installing on the board
# itself, /usr/local/bin/node with --root: an image's Node, which may be for another CPU).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
config="" board="" root="" node="" host_node="" start=1
usage="usage: $0 --config FILE --board ID [--node PATH] [--host-node PATH] [--root DIR] [--no-start]"
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config="$2"; shift 2 ;;
    --board) board="$2"; shift 2 ;;
    --root) root="$2"; start=0; shift 2 ;;
    --node) node="$2"; shift 2 ;;
    --host-node) host_node="$2"; shift 2 ;;
    --no-start) start=0; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
[ -n "$config" ] && [ -n "$board" ] || { echo "$usage" >&2; exit 2; }
host_node="${host_node:-$(command -v node || true)}"
[ -x "$host_node" ] || { echo "node not found on this machine: install Node 20 (docs/installing.md) or pass --host-node" >&2; exit 2; }
major() { "$1" -p 'process.versions.node.split(".")[0]'; }
case "$(major "$host_node")" in
  2[0-9]|[3-9][0-9]) ;;
  *) echo "$host_node is Node $("$host_node" --version); ews needs Node 20 or later" >&2; exit 2 ;;
esac
if [ -z "$root" ]; then
  node="${node:-$host_node}"
  [ -x "$node" ] || { echo "--node $node: not an executable here" >&2; exit 2; }
else
  node="${node:-/usr/local/bin/node}"
  # The image's Node may be for another CPU: it need not run here, but it must be in the image.
  [ -e "$root$node" ] || echo "note: $node is not in the image under $root yet: the unit and the ews command name it" >&2
fi
case "$node" in /*) ;; *) echo "--node must be an absolute path (the unit names it)" >&2; exit 2 ;; esac

# The package: from a checkout (build it) or from an unpacked dist/board.
if [ -f "$here/../package.json" ] && [ -d "$here/../node" ]; then
  (cd "$here/.." && bash deploy/pack.sh >/dev/null)
  pkg="$here/../dist/board"
else
  pkg="$here"
fi

# Refuse a config this board cannot run: validated by the very bundle that will run it.
"$host_node" "$pkg/ews.js" check-config --config "$config" >/dev/null
"$host_node" -e 'const c=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); if(!c.boards.some(b=>b.id===process.argv[2])){console.error(`board: "${process.argv[2]}" is not in ${process.argv[1]}`);process.exit(2)}' "$config" "$board"

# With a VIP the board claims the address with ip and announces it with arping: both must be there.
if grep -q '"vip"' "$config"; then
  for tool in ip arping; do
    found=""
    for d in /usr/sbin /sbin /usr/bin /bin; do [ -x "$root$d/$tool" ] && found=1; done
    [ -n "$root" ] || { command -v "$tool" >/dev/null 2>&1 && found=1; }
    [ -n "$found" ] || { echo "$tool not found${root:+ under $root}: the cluster VIP needs it (Debian: apt-get install iproute2 iputils-arping)" >&2; exit 2; }
  done
fi

# An image gets the ews user written into its own passwd and group.
if [ -n "$root" ] && { [ ! -f "$root/etc/passwd" ] || [ ! -f "$root/etc/group" ]; }; then
  echo "no etc/passwd and etc/group under $root: is it a root file system?" >&2
  exit 2
fi

# Releases (node/upgrade/releases.ts): /opt/ews/releases/<version>/, `current` the one the unit
# runs, `previous` the one before (a rolling upgrade adds the next ones itself).
version=$("$host_node" -p 'require(process.argv[1]).version' "$pkg/release.json")
[ -f "$root/opt/ews/ews.js" ] && rm -rf "$root/opt/ews"  # the flat layout of earlier installs
install -d "$root/opt/ews/releases" "$root/etc/ews" "$root/etc/systemd/system"
rm -rf "$root/opt/ews/releases/.$version.new"
cp -r "$pkg" "$root/opt/ews/releases/.$version.new"
was=$(readlink "$root/opt/ews/current" 2>/dev/null || true)
rm -rf "$root/opt/ews/releases/$version"
mv "$root/opt/ews/releases/.$version.new" "$root/opt/ews/releases/$version"
if [ -n "$was" ] && [ "$was" != "releases/$version" ]; then ln -sfn "$was" "$root/opt/ews/previous"; fi
ln -sfn "releases/$version" "$root/opt/ews/.current.new" && mv -T "$root/opt/ews/.current.new" "$root/opt/ews/current"
install -m 0640 "$config" "$root/etc/ews/cluster.json"
printf 'EWS_BOARD=%s\n' "$board" > "$root/etc/ews/board.env"
# The package's unit already names the board V8 flags (deploy/pack.sh); only the Node is this install's.
sed -e "s#@NODE@#$node#" "$pkg/ews.service" > "$root/etc/systemd/system/ews.service"

# `ews` on PATH: a wrapper that runs the installed bundle with this Node.
install -d "$root/usr/local/bin"
printf '#!/bin/sh\nexec %s /opt/ews/current/ews.js "$@"\n' "$node" > "$root/usr/local/bin/ews"
chmod 0755 "$root/usr/local/bin/ews"

# The unit runs as User=ews (in group dialout for the serial ports); the config is root:ews 0640.
if [ -z "$root" ]; then
  id ews >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin --groups dialout ews
  chown root:ews /etc/ews/cluster.json
  chown -R ews:ews /opt/ews  # a rolling upgrade writes the next release here
else
  if ! grep -q '^ews:' "$root/etc/passwd"; then
    # The first free system id (100-999) in the image, for both the user and its group.
    id=$(awk -F: 'FNR==1{f++} {used[$3]=1} END{for(i=100;i<1000;i++) if(!used[i]){print i; exit}}' "$root/etc/passwd" "$root/etc/group")
    [ -n "$id" ] || { echo "no free system id under $root" >&2; exit 2; }
    grep -q '^ews:' "$root/etc/group" || echo "ews:x:$id:" >> "$root/etc/group"
    gid=$(awk -F: '$1=="ews"{print $3}' "$root/etc/group")
    echo "ews:x:$id:$gid:ews board runtime:/nonexistent:/usr/sbin/nologin" >> "$root/etc/passwd"
    [ -f "$root/etc/shadow" ] && echo "ews:!:1::::::" >> "$root/etc/shadow"
    # In dialout too (the serial ports), if the image has that group.
    sed -i -E '/^dialout:/{/[:,]ews(,|$)/!{s/:$/:ews/;t;s/$/,ews/}}' "$root/etc/group"
  fi
  gid=$(awk -F: '$1=="ews"{print $3}' "$root/etc/group")
  uid=$(awk -F: '$1=="ews"{print $3}' "$root/etc/passwd")
  chown -R "$uid:$gid" "$root/opt/ews" 2>/dev/null || true
  chown "0:$gid" "$root/etc/ews/cluster.json" 2>/dev/null || echo "note: could not give $root/etc/ews/cluster.json to group ews ($gid); run this as root, or chown it in the image" >&2
fi
if [ "$start" = 1 ]; then
  systemctl daemon-reload
  systemctl enable --now ews.service
  echo "ews started as board $board: systemctl status ews; journalctl -u ews -f"
else
  echo "ews installed under ${root:-/} as board $board (not started)"
fi
