#!/bin/bash
# Sourced by the build scripts of components whose source the Go module proxy serves as an archive only
# (go install refuses them or the proxy refuses their .info/.mod): module_source MODULE VERSION ZIP_SHA256
# fetches the archive from the proxy, checks it against the pinned SHA-256, unpacks it into a temporary
# directory removed on exit, and changes into the module's root.
module_source() {
  local module=$1 version=$2 sha=$3 proxy
  proxy=$(go env GOPROXY | tr ',|' '\n\n' | grep -m1 -v '^\(direct\|off\)$')
  work=$(mktemp -d)
  trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
  curl -fsSL --retry 3 -o "$work/src.zip" "$proxy/$module/@v/$version.zip"
  echo "$sha  $work/src.zip" | sha256sum -c --quiet
  (cd "$work" && unzip -q src.zip)
  cd "$work/$module@$version"
}
