#!/bin/sh
# Makes sure a Go toolchain new enough for go.mod is at hand for the bart harness. Uses `go` on
# PATH or /usr/local/go when new enough; otherwise fetches the official toolchain from the Go
# module proxy (proxy.golang.org serves toolchains as modules) into target/go. Debian 12's
# golang-go (1.19) is too old for bart.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
want=$(sed -n 's/^go \([0-9][0-9.]*\).*/\1/p' "$here/go.mod")
dest="$here/../../../target/go"
version=1.24.13

new_enough() { # $1: a go binary
	v=$("$1" env GOVERSION 2>/dev/null | sed 's/^go//') || return 1
	[ -n "$v" ] && [ "$(printf '%s\n%s\n' "$want" "$v" | sort -V | head -n1)" = "$want" ]
}
for g in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go "$dest/bin/go"; do
	if [ -n "$g" ] && [ -x "$g" ] && new_enough "$g"; then
		echo "bench-deps: Go $("$g" env GOVERSION) at $g"
		exit 0
	fi
done
arch=$(uname -m); case "$arch" in x86_64) arch=amd64;; aarch64) arch=arm64;; esac
url="https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go$version.linux-$arch.zip"
echo "bench-deps: fetching Go $version from the Go module proxy into target/go"
tmp=$(mktemp -d)
curl -fsSL "$url" -o "$tmp/go.zip"
unzip -q "$tmp/go.zip" -d "$tmp"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp"/golang.org/toolchain@*/ "$dest"
chmod +x "$dest"/bin/* "$dest"/pkg/tool/*/* 2>/dev/null || true
rm -rf "$tmp"
"$dest/bin/go" version
