#!/bin/sh
# tests/cli/test_cli.sh - the dnnsat command line end to end: real estimates,
# exit statuses (0 fits, 1 invalid or too big, 2 bad input) and error
# messages that name the offending option or field. Prints "N passed, N failed".
set -u
top_srcdir="${top_srcdir:-.}"
top_builddir="${top_builddir:-.}"
DNNSAT="$top_builddir/dnnsat"
export DNNSAT_DATA_DIR="${DNNSAT_DATA_DIR:-$top_srcdir/schemas}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top_srcdir/tests/cli/check.sh"

check resnet50-table 0 "parameters   25,557,032" -- estimate --preset resnet50
check resnet50-json 0 '"params": 25557032' -- estimate --preset resnet50 --json
check positional-preset 0 "MACs.*(4.089 G)" -- estimate resnet50 batch_size=1
check template-set 0 "parameters   11,689,512" -- estimate --template resnet --set block=basic layers1=2 layers2=2 layers3=2 layers4=2
check bert 0 "109,482,240" -- estimate --preset bert-base --device a100-80gb
check per-op 0 "conv2d" -- estimate --preset resnet18 --per-op
check inference 0 "inference peak" -- estimate --preset vgg16 --inference --dtype fp16
check model-file 0 "parameters   5,288,548" -- estimate --model "$top_srcdir/examples/models/efficientnet_b0.json"
check does-not-fit 1 "DOES NOT FIT" -- estimate --preset gpt2 batch_size=64 --device t4
printf '{"dnnsat_model": 1, "hyperparameters": {"k": {"type": "int", "default": 3}, "n": {"type": "int", "default": 2}}, "inputs": [{"shape": ["n", 3, 4, 4]}], "layers": [{"op": "conv2d", "out_channels": 8, "kernel": "k"}]}' > "$tmp/small.json"
check valid-small 0 "valid        yes" -- estimate --model "$tmp/small.json"
check invalid 1 'violated   $.layers\[0\]: output height >= 1.*output size=-2' -- estimate --model "$tmp/small.json" k=7
check templates 0 "resnet" -- templates
check devices 0 "h200" -- devices
check devices-json 0 '"name": "a100-40gb"' -- devices --json

# bad input: exit 2, the message names what is wrong
check no-model 2 "name a model" -- estimate
check unknown-option 2 "--frobnicate: unknown option" -- estimate --preset resnet50 --frobnicate
check unknown-template 2 "no template or preset named \"resnet9000\"" -- estimate --preset resnet9000
check unknown-hp 2 "no hyperparameter \"depth\"" -- estimate --preset resnet50 depth=3
check bad-value 2 "batch_size.*not a number" -- estimate --preset resnet50 batch_size=many
check out-of-range 2 "outside the model's range" -- estimate --preset resnet50 batch_size=0
check bad-categorical 2 "\"huge\" is not one of the values of block" -- estimate --preset resnet50 block=huge
check unknown-device 2 "--device: unknown device \"tpu\"" -- estimate --preset resnet50 --device tpu
check unknown-optimizer 2 "unknown optimizer" -- estimate --preset resnet50 --optimizer lion
check unknown-dtype 2 "unknown dtype" -- estimate --preset resnet50 --dtype fp8
check missing-file 2 "nope.json" -- estimate --model "$tmp/nope.json"
printf '{"dnnsat_model": 1, "inputs": [{"shape": [2, 3]}], "layers": [{"op": "linear", "out_features": "w * 2"}]}' > "$tmp/bad.json"
check bad-expression 2 "\$.layers\[0\].out_features: expression \"w \* 2\": unknown name 'w'" -- estimate --model "$tmp/bad.json"
printf '{"dnnsat_model": 1, "layers": [' > "$tmp/trunc.json"
check malformed-json 2 "line 1" -- estimate --model "$tmp/trunc.json"
printf '{"name": "g", "memory_bytes": 1e10, "memory_bandwidth_bytes_per_s": 1e12, "sm_count": 0, "peak_flops": {"fp32": 1e13}}' > "$tmp/dev.json"
check bad-device-file 2 "sm_count" -- estimate --preset resnet18 --device-file "$tmp/dev.json"
check overflow 2 "inputs\[0\]: a value overflows 64 bits" -- estimate --model "$tmp/small.json" n=1000000000000000000
check unknown-command 2 "unknown command" -- frobnicate

# the solver's offline commands on a small MLP space (1536 configurations)
SP="$top_srcdir/examples/spaces/mlp.json"
Q="--preset mnist_mlp --space $SP --budget memory=3GiB --budget params=5M --device t4"
check count 0 "feasible 528 of 1536 configurations (34.38%), exact" -- count $Q
check count-json 0 '"feasible": "528"' -- count $Q --json
check list-first 0 '{"batch_size":32,"hidden":256,"depth":1,"activation":"relu"}' -- list $Q --limit 1
"$DNNSAT" list $Q --limit 2 >/dev/null 2>"$tmp/cursor"
cursor=$(sed -n 's/^next cursor: //p' "$tmp/cursor")
# the page after the cursor is the third configuration (listing order: the engine's
# variable order, categorical dims first)
third=$("$DNNSAT" list $Q --offset 2 --limit 1 2>/dev/null)
check list-cursor 0 "^$third\$" -- list $Q --limit 1 --cursor "$cursor"
check list-offset 0 '"batch_size"' -- list $Q --offset 527 --limit 5
check list-past-end 1 "^$" -- list $Q --offset 528 --limit 1
check sample 0 '"hidden"' -- sample $Q --n 5 --seed 3
check reduce 0 "\"_type\": \"randint\"" -- reduce $Q --budget macs=20M
check max-per 0 "depth = 8: largest batch_size" -- max $Q --param batch_size --per depth
check min-per 0 "depth = 3: smallest hidden = 768" -- min $Q --constraint "hidden * depth >= 2048" --param hidden --per depth
check min-json 0 '"hidden": 1024' -- min $Q --constraint "hidden >= 1000" --param hidden --json
check min-none-fits 0 "smallest hidden = none fits" -- min $Q --budget memory=1KiB --param hidden
check min-no-param 2 "min: give --param NAME" -- min $Q
check min-unknown 2 "--param: the space has no parameter \"nope\"" -- min $Q --param nope
check max-no-order 2 "--param: \"activation\" has values that are not numbers" -- max $Q --param activation
check min-no-order 2 "--param: \"activation\" has values that are not numbers" -- min $Q --param activation
check min-passthrough 0 "smallest learning_rate = 0.0001" -- min $Q --param learning_rate
check max-passthrough-none 0 "largest learning_rate = none fits" -- max $Q --budget memory=1KiB --param learning_rate
check per-continuous 2 "--per: \"learning_rate\" is continuous (loguniform): one row per value" -- max $Q --param depth --per learning_rate
# a width multiplier bound to the model: exact on its grid of 1025 values
MW="--template mobilenet_v2 --space $top_srcdir/examples/spaces/mobilenet-width.json --device t4 --budget memory=2GiB"
check max-continuous 0 "largest width_mult = 1.311279296875" -- max $MW --param width_mult
check max-continuous-per 0 "batch_size = 32: largest width_mult = 0.555419921875" -- max $MW --param width_mult --per batch_size
check explain-continuous-kept 0 "width_mult = 1.3113 is kept" -- explain $MW --param width_mult --value 1.3113
check explain-continuous-removed 1 "width_mult = 1.32 is removed: no configuration with it satisfies" -- explain $MW --param width_mult --value 1.32
check explain-continuous-range 2 "--value: 3 is outside the range of \"width_mult\"" -- explain $MW --param width_mult --value 3
check min-per-itself 2 "--per: \"depth\" is param itself" -- min $Q --param depth --per depth
check help-min 0 "min  *the smallest feasible value" -- --help
check explain-config 1 "FAIL memory <= 3 GiB" -- explain $Q --config '{"batch_size": 16384, "hidden": 4096, "depth": 8, "activation": "gelu"}'
check explain-kept 0 "is kept" -- explain $Q --param hidden --value 512
check explain-removed 1 "is removed: no configuration with it satisfies" -- explain $Q --budget params=100K --param hidden --value 4096
check nothing-fits 1 "feasible 0 of" -- count $Q --budget memory=1KiB
check bad-budget 2 "\$.budgets.memory: unknown unit" -- count $Q --budget memory=3parsecs
check bad-constraint 2 "\$.constraints\[0\]" -- count $Q --constraint "hidden %"
check bad-space 2 "randint" -- count --preset mnist_mlp --space "$top_srcdir/tests/data/bad_randint.json"
check bad-cursor 2 "cursor belongs to another query" -- list $Q --cursor c1.0000000000000000.0-0-0-0
# a deadline: a space (1.3e30 configurations) that no machine counts within it
check deadline 3 "deadline of" -- count --model "$top_srcdir/examples/models/transformer24.json" --space "$top_srcdir/examples/spaces/transformer24.json" --budget memory=16GiB --timeout 0.2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
