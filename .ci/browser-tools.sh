#!/usr/bin/env bash
# Install the pinned browser-test tool (playwright-core) into a tools
# folder, from the committed package.json + package-lock.json in
# examples/refserver/webtest/. The browser itself is Debian's chromium
# (apt-get install chromium): Playwright never downloads one here.
#
# Usage: bash .ci/browser-tools.sh [TOOLS_DIR]     (default: $PWD/.tools/browser)
# Idempotent: a second run with unchanged pins only prints the versions.
# Then: ASKBI_BROWSER_TOOLS=TOOLS_DIR go test ./examples/refserver -run TestBrowser
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/../examples/refserver/webtest"
dest="${1:-$PWD/.tools/browser}"

command -v npm >/dev/null || { echo "browser-tools: npm not found" >&2; exit 1; }
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
stamp="$dest/.browser-tools.sha256"
want="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -f "$dest/node_modules/playwright-core/package.json" ]]; then
  echo "browser-tools: up to date in $dest"
else
  echo "browser-tools: installing into $dest"
  rm -f "$stamp"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  # playwright-core has no install script and downloads no browser.
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$dest" --no-audit --no-fund --loglevel=error
  echo "$want" >"$stamp"
fi
echo "browser-tools versions ($dest):"
echo "  node           $(node --version)"
echo "  playwright-core $(node -p "require('$dest/node_modules/playwright-core/package.json').version")"
echo "  chromium       $( (/usr/bin/chromium --version 2>/dev/null || echo 'not installed') | head -1)"
