# Sourced by the interop tests whose Node.js clients need a newer Node than Debian 12's (18):
# need_node MIN sets $NODE to a node binary of version MIN or later. The system's node is used
# when it is new enough; otherwise Node.js 20 comes from the npm registry (the node-linux-<arch>
# package, the official build) into tests/interop/.node, once. Needs $HERE and $WORK.

# version_at_least HAVE MIN: true when dotted version HAVE >= MIN.
version_at_least() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]
}

need_node() {
  local min=$1 have arch pkg
  NODE=""
  if command -v node >/dev/null; then
    have=$(node -p process.versions.node 2>/dev/null || echo 0)
    if version_at_least "$have" "$min"; then
      NODE=$(command -v node)
      return 0
    fi
  fi
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64) arch=arm64 ;;
    *) skip "no Node.js >= $min for $(uname -m) (the system's is ${have:-missing})" ;;
  esac
  pkg=node-linux-$arch
  NODE="$HERE/.node/node_modules/$pkg/bin/node"
  if [ ! -x "$NODE" ]; then
    command -v npm >/dev/null || skip "Node.js >= $min needed and npm is not installed"
    echo "installing Node.js 20 ($pkg from the npm registry) into $HERE/.node" >&2
    if ! npm install --prefix "$HERE/.node" --no-save --no-audit --no-fund "$pkg@20.20.2" \
        >"$WORK/npm-node.log" 2>&1; then
      cat "$WORK/npm-node.log" >&2
      skip "Node.js >= $min needed, and $pkg could not be installed from the npm registry"
    fi
  fi
  have=$("$NODE" -p process.versions.node 2>/dev/null || echo 0)
  version_at_least "$have" "$min" || skip "the installed $pkg is Node.js $have, older than $min"
}
