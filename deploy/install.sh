#!/usr/bin/env bash
# Put ews on a board: the package from dist/board, the cluster config, the board's id, a systemd
# unit. Run as root on the board (or with --root DIR to lay it out under DIR, e.g. an image).
#   deploy/install.sh --config cluster.json --board ews1 [--node /usr/local/bin/node] [--root DIR] [--no-start]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
config="" board="" root="" node="" start=1
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config="$2"; shift 2 ;;
    --board) board="$2"; shift 2 ;;
    --root) root="$2"; start=0; shift 2 ;;
    --node) node="$2"; shift 2 ;;
    --no-start) start=0; shift ;;
    *) echo "usage: $0 --config FILE --board ID [--node PATH] [--root DIR] [--no-start]" >&2; exit 2 ;;
  esac
done
[ -n "$config" ] && [ -n "$board" ] || { echo "usage: $0 --config FILE --board ID [--node PATH] [--root DIR] [--no-start]" >&2; exit 2; }
node="${node:-$(command -v node || true)}"
[ -x "$node" ] || { echo "node not found: install Node 20 (see README) or pass --node" >&2; exit 2; }
case "$("$node" -p 'process.versions.node.split(".")[0]')" in
  2[0-9]|[3-9][0-9]) ;;
  *) echo "$node is Node $("$node" --version); ews needs Node 20 or later" >&2; exit 2 ;;
esac

# The package: from a checkout (build it) or from an unpacked dist/board.
if [ -f "$here/../package.json" ] && [ -d "$here/../node" ]; then
  (cd "$here/.." && bash deploy/pack.sh >/dev/null)
  pkg="$here/../dist/board"
else
  pkg="$here"
fi

# Refuse a config this board cannot run: validated by the very bundle that will run it.
"$node" "$pkg/ews.js" check-config --config "$config" >/dev/null
"$node" -e 'const c=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); if(!c.boards.some(b=>b.id===process.argv[2])){console.error(`board: "${process.argv[2]}" is not in ${process.argv[1]}`);process.exit(2)}' "$config" "$board"

install -d "$root/opt/ews" "$root/etc/ews" "$root/etc/systemd/system"
rm -rf "$root/opt/ews.new"
cp -r "$pkg" "$root/opt/ews.new"
rm -rf "$root/opt/ews"
mv "$root/opt/ews.new" "$root/opt/ews"
install -m 0640 "$config" "$root/etc/ews/cluster.json"
printf 'EWS_BOARD=%s\n' "$board" > "$root/etc/ews/board.env"
# Keep in step with node/node-flags.ts (a test checks).
sed -e "s#@NODE@#$node#" -e "s#@NODE_OPTIONS@#--max-semi-space-size=1 --max-old-space-size=48#" "$pkg/ews.service" > "$root/etc/systemd/system/ews.service"

if [ -z "$root" ]; then
  id ews >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin --groups dialout ews
  chgrp ews /etc/ews/cluster.json
fi
if [ "$start" = 1 ]; then
  systemctl daemon-reload
  systemctl enable --now ews.service
  echo "ews started as board $board: systemctl status ews; journalctl -u ews -f"
else
  echo "ews installed under ${root:-/} as board $board (not started)"
fi
