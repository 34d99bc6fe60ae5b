#!/bin/sh
# Generates the Python protobuf and gRPC stubs of KubeVirt's hook API
# (kubevirt/proto/kubevirt.io/hooks/...) into OUTDIR, as the importable
# package `kubevirt_hooks` (kubevirt_hooks.info.api_info_pb2,
# kubevirt_hooks.v1alpha3.api_v1alpha3_pb2 and their _pb2_grpc). The proto
# packages (kubevirt.hooks.info, kubevirt.hooks.v1alpha3) and so the wire
# names stay as upstream's; only the generated files' module path differs.
# Tools: protoc (protobuf-compiler) and /usr/bin/grpc_python_plugin
# (protobuf-compiler-grpc). Used by the tests' build and by the image.
#   generate-stubs.sh OUTDIR
set -eu
out=${1:?usage: generate-stubs.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
protos=$here/../proto/kubevirt.io/hooks
plugin=${GRPC_PYTHON_PLUGIN:-/usr/bin/grpc_python_plugin}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/kubevirt_hooks/info" "$stage/kubevirt_hooks/v1alpha3" "$out"
cp "$protos/info/api_info.proto" "$stage/kubevirt_hooks/info/"
cp "$protos/v1alpha3/api_v1alpha3.proto" "$stage/kubevirt_hooks/v1alpha3/"
protoc -I "$stage" --python_out="$out" --grpc_out="$out" --plugin=protoc-gen-grpc="$plugin" \
  kubevirt_hooks/info/api_info.proto kubevirt_hooks/v1alpha3/api_v1alpha3.proto
for d in "$out/kubevirt_hooks" "$out/kubevirt_hooks/info" "$out/kubevirt_hooks/v1alpha3"; do
  : > "$d/__init__.py"
done
