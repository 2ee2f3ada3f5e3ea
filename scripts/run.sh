#!/bin/sh
# scripts/run.sh - README's first command: installs what dnnsat needs, builds
# it and runs the main job. Until the HTTP service lands, the main job is the
# cost model and the solver on real examples: ResNet-50 training on an A100
# and GPT-2 on an H100 as readable tables, then an NNI search space pruned to
# a 6 GiB budget.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
echo
echo "== dnnsat estimate --preset resnet50 batch_size=64 --device a100-40gb"
./dnnsat estimate --preset resnet50 batch_size=64 --device a100-40gb || true
echo
echo "== dnnsat estimate --preset gpt2 batch_size=8 seq_len=1024 --device h100-sxm-80gb --dtype mixed_bf16 --optimizer adamw"
./dnnsat estimate --preset gpt2 batch_size=8 seq_len=1024 --device h100-sxm-80gb --dtype mixed_bf16 --optimizer adamw || true
echo
echo "== dnnsat count / reduce --preset resnet50 --space examples/spaces/resnet.json --budget memory=6GiB"
./dnnsat count --preset resnet50 --space examples/spaces/resnet.json --budget memory=6GiB || true
./dnnsat reduce --preset resnet50 --space examples/spaces/resnet.json --budget memory=6GiB || true
echo
echo "More: ./dnnsat --help, ./dnnsat templates, ./dnnsat devices"
