#!/usr/bin/env bash
# Builds the image of a Containerfile without pulling anything: the same static build as its build
# stage, then an OCI image from scratch with buildah (vfs storage, chroot isolation), written as an
# OCI archive. Then checks what a cluster relies on — entrypoint, non-root user, labels — from the
# image config, and runs the binary taken back out of the image's layer.
#
#   deploy/image/build-offline.sh [OUT.tar]     (default target/image/<binary>-<version>.oci.tar)
#   CONTAINERFILE=examples/sample-controller/Containerfile deploy/image/build-offline.sh
#
# The binary and the image's name are the Containerfile's title label; the package, the cargo
# flags (`--no-default-features`), the command and the exposed ports are read from the
# Containerfile too. Needs Debian's buildah and skopeo, and python3. Load the result into a cluster with
#   skopeo copy oci-archive:OUT.tar docker-archive:img.tar:<binary>:<version> && kind load image-archive img.tar
set -euo pipefail
cd "$(dirname "$0")/../.."

containerfile="${CONTAINERFILE:-Containerfile}"
[ -f "$containerfile" ] || { echo "CONTAINERFILE=$containerfile: no such file"; exit 1; }
name="$(sed -n 's/.*org.opencontainers.image.title="\([^"]*\)".*/\1/p' "$containerfile" | head -1)"
[ -n "$name" ] || { echo "$containerfile has no org.opencontainers.image.title label"; exit 1; }
# The build stage's `cargo build <flags> --target …`: the same flags here, the package among them.
read -r -a build_flags < <(sed -n 's/.*cargo build \(.*\) --target.*/\1/p' "$containerfile" | head -1)
package="$(sed -n 's/.*cargo build .*-p \([^ ]*\).*/\1/p' "$containerfile" | head -1)"
[ -n "$package" ] && [ "${#build_flags[@]}" -gt 0 ] || { echo "$containerfile has no 'cargo build … -p PACKAGE … --target' line"; exit 1; }
# The command, as the Containerfile's exec form: CMD ["run"].
cmd="$(sed -n 's/^CMD //p' "$containerfile" | tail -1)"
[ -n "$cmd" ] || { echo "$containerfile has no CMD"; exit 1; }
ports=()
while read -r p; do ports+=(--port "$p"); done < <(sed -n 's/^EXPOSE //p' "$containerfile" | tr ' ' '\n')
version="$(cargo pkgid -p "$package" | sed 's/.*[#@]//')"
out="${1:-target/image/$name-$version.oci.tar}"
target="$(uname -m)-unknown-linux-gnu"
mkdir -p "$(dirname "$out")"

echo "== static build ($target): cargo build ${build_flags[*]}"
RUSTFLAGS='-C target-feature=+crt-static' cargo build "${build_flags[@]}" --target "$target"
bin="target/$target/release/$name"
if ldd "$bin" 2>&1 | grep -q '=>'; then
  echo "not a static binary:"; ldd "$bin"; exit 1
fi

echo "== image from scratch (buildah, vfs, chroot)"
export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot
# Labels and config are read from the Containerfile, so the two builds cannot drift apart.
labels=()
while IFS= read -r l; do labels+=(--label "$l"); done < <(
  python3 - "$containerfile" <<'PY'
import re, shlex, sys
text = open(sys.argv[1]).read().replace("\\\n", " ")
for line in text.splitlines():
    if line.startswith("LABEL "):
        for item in shlex.split(line[len("LABEL "):]):
            print(item)
PY
)
user="$(sed -n 's/^USER //p' "$containerfile" | tail -1)"
ctr="$(buildah --storage-driver vfs from scratch)"
trap 'buildah --storage-driver vfs rm "$ctr" >/dev/null 2>&1 || true' EXIT
buildah --storage-driver vfs copy "$ctr" "$bin" "/$name"
buildah --storage-driver vfs config \
  --entrypoint "[\"/$name\"]" --cmd "$cmd" --user "$user" "${ports[@]}" "${labels[@]}" "$ctr"
rm -f "$out"
buildah --storage-driver vfs commit --format oci "$ctr" "oci-archive:$out:$name:$version" >/dev/null

echo "== checks"
skopeo inspect --config "oci-archive:$out" > "$out.config.json"
python3 - "$out" "$out.config.json" "$version" "$name" "$cmd" <<'PY'
import io, json, sys, tarfile
archive, config_path, version, name, cmd = sys.argv[1:]
cfg = json.load(open(config_path))["config"]
assert cfg["Entrypoint"] == ["/" + name], cfg
assert cfg["Cmd"] == json.loads(cmd), cfg
assert cfg["User"] == "65532:65532", cfg
labels = cfg.get("Labels", {})
assert labels.get("org.opencontainers.image.version") == version, labels
assert labels.get("org.opencontainers.image.title") == name, labels
# Take the binary back out of the image's only layer.
with tarfile.open(archive) as oci:
    blob = lambda d: oci.extractfile("blobs/sha256/" + d.split(":", 1)[1]).read()
    index = json.loads(oci.extractfile("index.json").read())
    manifest = json.loads(blob(index["manifests"][0]["digest"]))
    layers = manifest["layers"]
    assert len(layers) == 1, layers
    with tarfile.open(fileobj=io.BytesIO(blob(layers[0]["digest"]))) as layer:
        names = [m.name.lstrip("./") for m in layer.getmembers() if m.isfile()]
        assert names == [name], names
        data = layer.extractfile([m for m in layer.getmembers() if m.isfile()][0]).read()
open(archive + ".bin", "wb").write(data)
print(f"image config ok: entrypoint, user 65532:65532, labels; one layer holding /{name} ({len(data) // 1024} KiB)")
PY
chmod +x "$out.bin"
got="$("$out.bin" --version)"
[ "$got" = "$name $version" ] || { echo "the binary from the image says: $got"; exit 1; }
echo "the binary from the image runs: $got"
# README's step towards kind/minikube: the same image as a docker archive.
skopeo copy -q "oci-archive:$out" "docker-archive:${out%.oci.tar}.docker.tar:$name:$version"
echo "docker archive for kind/minikube: ${out%.oci.tar}.docker.tar"
echo "image: $out ($(du -h "$out" | cut -f1))"
