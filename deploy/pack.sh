#!/usr/bin/env bash
# dist/board/: what a board runs — the bundle, the content trees, and only the runtime packages
# the bundle leaves outside (serialport with its prebuilt bindings, mqtt). No TypeScript, no tsx.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run build >/dev/null  # always: a stale bundle must never be packed
out=dist/board
rm -rf "$out"
mkdir -p "$out/node_modules"
cp dist/ews.js "$out/ews.js"
cp dist/ews-plane.js "$out/ews-plane.js"  # the cluster plane's thread
cp -r dist/site "$out/site"
cp README.md deploy/example-cluster.json deploy/install.sh "$out/"
# The unit with the board V8 flags on its command line, from their one list (shared/node-flags.ts).
flags=$(node --import tsx -e 'import("./shared/node-flags.ts").then((m) => process.stdout.write(m.BOARD_NODE_FLAGS.join(" ")))')
sed -e "s#@NODE_FLAGS@#$flags#" deploy/ews.service > "$out/ews.service"
printf '{ "name": "ews-board", "private": true, "type": "module" }\n' > "$out/package.json"
# The release's version (node/version.ts reads it beside ews.js; a bundle may raise it).
node -e 'process.stdout.write(JSON.stringify({ version: require("./package.json").version }) + "\n")' > "$out/release.json"
# The production dependency tree, as npm resolved it (pino is in the bundle too; small).
npm ls --omit=dev --all --parseable 2>/dev/null | grep '/node_modules/' | while read -r dir; do
  rel="${dir#"$PWD"/}"
  mkdir -p "$out/$(dirname "$rel")"
  [ -e "$out/$rel" ] || cp -r "$dir" "$out/$rel"
done
# Boards are Linux: other systems' native prebuilds are dead weight.
find "$out/node_modules" -path '*/prebuilds/*' -maxdepth 5 -type d \( -name 'android-*' -o -name 'darwin-*' -o -name 'win32-*' \) -prune -exec rm -rf {} +
# Nothing a board loads: type declarations (@types/* are mqtt "dependencies"), source maps, docs,
# mqtt's browser bundles, and the C++ headers serialport's prebuilds were compiled with.
rm -rf "$out/node_modules/@types" "$out/node_modules/mqtt/dist" "$out/node_modules/node-addon-api"
find "$out/node_modules" -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' -o -iname 'CHANGELOG*' -o -iname 'README*' \) -delete
echo "dist/board: $(du -sh "$out" | cut -f1) ($(find "$out/node_modules" -maxdepth 2 -name package.json | wc -l) runtime packages)"
