#!/usr/bin/env bash
# Refresh book/assets/vendor/ from the npm registry, at the pinned versions below.
#
# The book draws each lesson's mindmap with markmap's view, which needs d3 as a
# global. Both are shipped inside the build, so the book works offline and from
# file://. Every tarball is checked against the sha512 pinned here, so a
# refresh either reproduces the committed files byte for byte or says which
# package changed. To move to a new version, change its version and integrity
# (`npm view PACKAGE@VERSION dist.integrity`), run this script, read the diff,
# and update book/vendor.md.
#
#     book/vendor.sh          # needs node, npm and the registry; writes nothing else
set -euo pipefail

# markmap-view's UMD build bundles markmap-common, d3-flextree and jsx-dom; the
# last three are fetched only for their licence texts.
MARKMAP_VIEW=0.18.12  # matches markmap-lib 0.18.12 in tests/markmap/package.json
MARKMAP_VIEW_SHA='sha512-D8bzT1YwIC/8rkbwm6WzigVUrpOAGv7ioEGTi1Lj+Oo8gO5sAm6hhli27jvTgUcZ9TwBeIWZ+dSUP+AupYUGlQ=='
D3=7.9.0  # markmap-view asks for d3 ^7.8.5
D3_SHA='sha512-e1U46jVP+w7Iut8Jt8ri1YsPOvFpg46k+K8TpCb0P+zjCkjkPnV7WzfDJzMHy1LnA+wj5pLT1wjO901gLXeEhA=='
MARKMAP_COMMON=0.18.9
MARKMAP_COMMON_SHA='sha512-MV2HQO7IGIm3jWEJXSG8vmdpqf4WIDXcEyAEN52lrWR1qD53Zg5l81JwjXoZ2l0rY5mofKYqUFlmdM2fqTGMVg=='
FLEXTREE=2.1.2
FLEXTREE_SHA='sha512-gJiHrx5uTTHq44bjyIb3xpbmmdZcWLYPKeO9EPVOq8EylMFOiH2+9sWqKAiQ4DcFuOZTAxPOQyv0Rnmji/g15A=='
JSX_DOM=2.2.2
JSX_DOM_SHA='sha512-EOqf31IATRE6zS1W1EoWmXZhGfLAoO9FIlwTtHduSrBdud4npYBxYAkv8dZ5hudDPwJeeSjn40kbCL4wAzr8dA=='
TERSER=5.44.1  # minifies markmap-view's browser build, which npm ships unminified

for tool in node npm tar; do
    command -v "$tool" >/dev/null || { echo "vendor.sh: $tool is missing; install Node.js 18 or later" >&2; exit 1; }
done

book=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vendor="$book/assets/vendor"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fetch DIR NAME VERSION INTEGRITY: unpack the checked tarball into $work/DIR/package.
fetch() {
    local dir=$1 name=$2 version=$3 integrity=$4 file actual
    mkdir -p "$work/tgz" "$work/$dir"
    file=$(cd "$work/tgz" && npm pack --silent "$name@$version")
    actual="sha512-$(node -e '
        const data = require("fs").readFileSync(process.argv[1]);
        process.stdout.write(require("crypto").createHash("sha512").update(data).digest("base64"));
    ' "$work/tgz/$file")"
    if [[ "$actual" != "$integrity" ]]; then
        echo "vendor.sh: $name@$version has integrity $actual, not the pinned $integrity" >&2
        exit 1
    fi
    tar -xzf "$work/tgz/$file" -C "$work/$dir"
}

fetch markmap-view markmap-view "$MARKMAP_VIEW" "$MARKMAP_VIEW_SHA"
fetch d3 d3 "$D3" "$D3_SHA"
fetch markmap-common markmap-common "$MARKMAP_COMMON" "$MARKMAP_COMMON_SHA"
fetch d3-flextree d3-flextree "$FLEXTREE" "$FLEXTREE_SHA"
fetch jsx-dom @gera2ld/jsx-dom "$JSX_DOM" "$JSX_DOM_SHA"

npm install --silent --prefix "$work/tools" --no-save --no-audit --no-fund "terser@$TERSER" >/dev/null

mkdir -p "$vendor"
cp "$work/d3/package/dist/d3.min.js" "$vendor/d3.min.js"
cp "$work/d3/package/LICENSE" "$vendor/d3.LICENSE.txt"

{
    echo "/*! markmap-view $MARKMAP_VIEW dist/browser/index.js, minified with terser $TERSER | MIT License */"
    "$work/tools/node_modules/.bin/terser" "$work/markmap-view/package/dist/browser/index.js" \
        --compress --mangle --comments '/^!/'
} >"$vendor/markmap-view.min.js"

{
    echo "markmap-view.min.js is markmap-view $MARKMAP_VIEW (dist/browser/index.js), which bundles"
    echo "markmap-common $MARKMAP_COMMON, d3-flextree $FLEXTREE and @gera2ld/jsx-dom $JSX_DOM."
    echo "Their licences follow, each as its package ships it."
    for part in "markmap-view $MARKMAP_VIEW (MIT):markmap-view" \
                "markmap-common $MARKMAP_COMMON (MIT):markmap-common" \
                "d3-flextree $FLEXTREE (WTFPL):d3-flextree" \
                "@gera2ld/jsx-dom $JSX_DOM (ISC):jsx-dom"; do
        echo
        echo "==== ${part%%:*} ===="
        echo
        cat "$work/${part##*:}/package/LICENSE"
    done
} >"$vendor/markmap-view.LICENSE.txt"

echo "vendor.sh: wrote $(cd "$vendor" && ls | tr '\n' ' ')into book/assets/vendor/"
