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
# --json is POST /v1/estimate's answer (test_batch.sh compares it with a server's)
check estimate-json-shape 0 '^  "costs": {' -- estimate --preset resnet50 --json
check estimate-json-check 0 '"constraint": "memory <= 39.39 GiB (a100-40gb.s usable memory)"' -- estimate --preset resnet50 --json
printf '{"name": "g", "memory_bytes": 10000000000, "memory_bandwidth_bytes_per_s": 1e12, "sm_count": 80, "peak_flops": {"fp32": 1e13}}' > "$tmp/gpu.json"
check estimate-json-device-file 0 '"feasible": true' -- estimate --preset resnet18 --device-file "$tmp/gpu.json" --json
check positional-preset 0 "MACs.*(4.089 G)" -- estimate resnet50 batch_size=1
check template-set 0 "parameters   11,689,512" -- estimate --template resnet --set block=basic layers1=2 layers2=2 layers3=2 layers4=2
check bert 0 "109,482,240" -- estimate --preset bert-base --device a100-80gb
check per-op 0 "conv2d" -- estimate --preset resnet18 --per-op
check inference 0 "inference peak" -- estimate --preset vgg16 --inference --dtype fp16
check model-file 0 "parameters   5,288,548" -- estimate --model "$top_srcdir/examples/models/efficientnet_b0.json"
check does-not-fit 1 "DOES NOT FIT" -- estimate --preset gpt2 batch_size=64 --device t4
# between the usable 14.56 GiB and the card's 16 GiB: does not fit, as the JSON says
check usable-not-card 1 "15.24 GiB training peak (backward), DOES NOT FIT 14.56 GiB usable (16.00 GiB on the card)" -- estimate --preset resnet50 --device t4 batch_size=147
# usable is what CUDA gives a process (torch's total_memory, 14912 MiB on a T4),
# not nvidia-smi's 15360 MiB, which counts the driver's reservation: 14.73 GiB does not fit
check usable-not-smi 1 "14.73 GiB training peak (backward), DOES NOT FIT 14.56 GiB usable" -- estimate --preset resnet50 --device t4 batch_size=142
check usable-not-card-json 1 '"feasible": false' -- estimate --preset resnet50 --device t4 batch_size=147 --json
printf '{"dnnsat_model": 1, "hyperparameters": {"k": {"type": "int", "default": 3}, "n": {"type": "int", "default": 2}}, "inputs": [{"shape": ["n", 3, 4, 4]}], "layers": [{"op": "conv2d", "out_channels": 8, "kernel": "k"}]}' > "$tmp/small.json"
check valid-small 0 "valid        yes" -- estimate --model "$tmp/small.json"
check invalid 1 'violated   $.layers\[0\]: output height >= 1.*output size=-2' -- estimate --model "$tmp/small.json" k=7
# a rule of every layer of a stack once, at its first place, with the repeats counted
# budgets for one configuration, as POST /v1/estimate takes them
check estimate-budget 1 '^  FAIL memory [0-9.]* GiB > 1 GiB$' -- estimate --preset resnet50 batch_size=64 --budget memory=1GiB --budget latency=1s
check_again estimate-budget-ok '^  ok   latency [0-9.]* ms <= 1 s$'
check estimate-budget-json 1 '"path": "$.budgets.memory",' -- estimate --preset resnet50 batch_size=64 --budget memory=1GiB --json
check estimate-budget-bad 2 'unknown budget "memroy": did you mean memory?' -- estimate --preset resnet50 --budget memroy=1GiB
check invalid-repeats 1 '^  violated   $.layers\[7\]\[0\][^ ]*: flash attention needs compute capability >= 8.0 (Ampere or newer) (compute capability x10=70) and 3 more places$' -- estimate --preset bert-base --device v100-16gb --attention flash
check_again invalid-no-values '^  violated   [^ ]*: flash attention needs fp16 or bf16 (dtype is fp32) and 3 more places$'
check templates 0 "resnet" -- templates
check devices 0 "h200" -- devices
# the memory budgets' cap is in the table: a T4's 14.56 GiB, not only its 16 GiB card
check devices-usable 0 "^t4  *NVIDIA T4  *16.0 GiB   14.56 GiB " -- devices
check devices-json 0 '"name": "a100-40gb"' -- devices --json
# the JSON has the table's USABLE too (it had the capacity only)
check devices-json-usable 0 '"name": "t4", .*"memory_bytes": 17179869184, "usable_memory_bytes": 15636365312,' -- devices --json

# bad input: exit 2, the message names what is wrong
check no-model 2 "name a model" -- estimate
check unknown-option 2 "--frobnicate: unknown option" -- estimate --preset resnet50 --frobnicate
# estimate: what is given once is refused the second time (the last won unsaid); --set repeats
check estimate-preset-twice 2 '^dnnsat: --preset: given twice (resnet50 and vgg16): give one$' -- estimate --preset resnet50 --preset vgg16
check estimate-device-twice 2 '^dnnsat: --device: given twice (t4 and v100-16gb): give one$' -- estimate --preset resnet50 --device t4 --device v100-16gb
check estimate-budget-twice 2 '^dnnsat: --budget: the memory budget given twice (--budget memory=1GiB and --budget memory=2GiB): give one$' -- estimate --preset resnet50 --budget memory=1GiB --budget memory=2GiB
# a budget refused (a bad unit) prints no estimate: the table said "fits" above the error
"$DNNSAT" estimate --preset resnet50 --device t4 --budget memory=1Gixx >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q 'unknown unit "Gixx"' "$tmp/out" && ! grep -q -e fits -e '^model ' "$tmp/out" && ok || bad "estimate-budget-bad-no-table"
check estimate-set-repeats 0 "^model        resnet  preset resnet50" -- estimate --preset resnet50 --set batch_size=2 --set batch_size=4
# the templates' data directory missing (a copy of the binary, a broken install): said as such,
# not "no template named resnet (did you mean resnet?)"
mkdir -p "$tmp/nodata"
data_dir=$DNNSAT_DATA_DIR
DNNSAT_DATA_DIR="$tmp/nodata"
check no-data-dir 2 "cannot read $tmp/nodata/templates/[a-z_0-9]*.json: No such file.*DNNSAT_DATA_DIR" -- estimate --template resnet
check no-data-dir-preset 2 "cannot read $tmp/nodata/templates/" -- estimate --preset resnet50
DNNSAT_DATA_DIR=$data_dir
check unknown-template 2 "no template or preset named \"resnet9000\"" -- estimate --preset resnet9000
check unknown-hp 2 "no hyperparameter \"depth\"" -- estimate --preset resnet50 depth=3
check bad-value 2 "batch_size.*not a number" -- estimate --preset resnet50 batch_size=many
check out-of-range 2 "outside the model's range" -- estimate --preset resnet50 batch_size=0
check bad-categorical 2 "\"huge\" is not one of the values of block" -- estimate --preset resnet50 block=huge
check unknown-device 2 "--device: unknown device \"tpu\"" -- estimate --preset resnet50 --device tpu
check unknown-optimizer 2 "unknown optimizer" -- estimate --preset resnet50 --optimizer lamb
check unknown-attention 2 "--attention: unknown attention kernel \"flash3\"" -- estimate --preset gpt2 --attention flash3
check bad-zero-grad 2 "--zero-grad: \"none\" is not set_to_none or zeros" -- estimate --preset gpt2 --zero-grad none
check near-optimizer-impl 2 '--optimizer-impl: "fsed" is not foreach, for_loop or fused (did you mean fused?)' -- estimate --preset gpt2 --optimizer-impl fsed
check bad-optimizer-impl-json 2 '\$.workload.optimizer_impl: must be "foreach" .*, "for_loop" .* or "fused"' -- count --preset resnet50 --space "$top_srcdir/examples/spaces/resnet.json" --optimizer-impl fast
# fused=True (torch.optim: Adam, AdamW, SGD) has no step temporaries: llama2-7b's full bf16 fine-tune
# peaks in backward instead of at the step (foreach: Adam's sqrt of every second moment at once)
check optimizer-foreach 1 '^memory       64.52 GiB training peak (optimizer step)' -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype bf16 --optimizer adamw
check optimizer-fused 1 '^memory       55.56 GiB training peak (backward)' -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype bf16 --optimizer adamw --optimizer-impl fused
check optimizer-fused-rmsprop 2 '--optimizer-impl: fused: torch.optim has fused CUDA steps for Adam, AdamW and SGD, not rmsprop' -- estimate --preset gpt2 --optimizer rmsprop --optimizer-impl fused
check optimizer-fused-rmsprop-json 2 '\$.workload.optimizer_impl: fused: .* not rmsprop' -- count --preset resnet50 --space "$top_srcdir/examples/spaces/resnet.json" --optimizer rmsprop --optimizer-impl fused
# Hugging Face's TrainingArguments.optim names: the optimizer, and the step they imply
check hf-optim-fused 1 'workload     training, bf16, adamw_torch_fused, attention sdpa (flash here), fused optimizer$' -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype bf16 --optimizer adamw_torch_fused
check hf-optim-fused-json 0 '^feasible ' -- count --preset resnet50 --space "$top_srcdir/examples/spaces/resnet.json" --optimizer adamw_torch_fused
check hf-optim-contradicted 2 '--optimizer-impl: "foreach" contradicts the optimizer "adamw_torch_fused", which is fused' -- estimate --preset gpt2 --optimizer adamw_torch_fused --optimizer-impl foreach
check hf-optim-contradicted-json 2 '\$.workload.optimizer_impl: "for_loop" contradicts the optimizer "adamw_torch_fused"' -- count --preset resnet50 --space "$top_srcdir/examples/spaces/resnet.json" --optimizer-impl for_loop --optimizer adamw_torch_fused
check hf-optim-paged-8bit 0 'workload     training, fp32, paged_adamw_8bit,' -- estimate --preset gpt2 --optimizer paged_adamw_8bit
check hf-optim-unmodelled 2 "--optimizer: Hugging Face's optim \"galore_adamw\" is not modelled (modelled: sgd, " -- estimate --preset gpt2 --optimizer galore_adamw
check hf-optim-unmodelled-json 2 "\\\$.workload.optimizer: Hugging Face's optim \"ademamix\" is not modelled" -- count --preset resnet50 --space "$top_srcdir/examples/spaces/resnet.json" --optimizer ademamix
# bitsandbytes' 32-bit optimizers keep fp32 states of bf16 weights (QLoRA's paged_adamw_32bit), its
# 8-bit ones a uint8 state per value; the name is written back, so the service reads the same
check hf-optim-32bit 0 '^  optimizer       6.12 GiB$' -- estimate --preset gpt2-large batch_size=8 seq_len=512 --dtype bf16 --optimizer paged_adamw_32bit
check hf-optim-torch-bf16 0 '^  optimizer       3.21 GiB$' -- estimate --preset gpt2-large batch_size=8 seq_len=512 --dtype bf16 --optimizer adamw_torch
check hf-optim-8bit-one-state 0 'workload     training, bf16, lion_8bit, .*, fused optimizer' -- estimate --preset gpt2-large batch_size=8 seq_len=512 --dtype bf16 --optimizer lion_8bit
check hf-optim-8bit-count 0 '^feasible ' -- count --preset resnet50 --space "$top_srcdir/examples/spaces/resnet.json" --optimizer rmsprop_bnb_8bit
# a value near an allowed one is named (costmodel/cm_choice.c, one table for both parsers)
check near-zero-grad 2 '--zero-grad: "zero" is not set_to_none or zeros (did you mean zeros?)' -- estimate --preset gpt2 --zero-grad zero
check near-optimizer-impl-json 2 '\$.workload.optimizer_impl: must be "foreach" .* (did you mean for_loop?)' -- count --preset resnet50 --space "$top_srcdir/examples/spaces/resnet.json" --optimizer-impl forloop
check near-softmax-saves 2 '--softmax-saves: "input" is not output or output_and_input (did you mean output_and_input?)' -- estimate --preset gpt2 --softmax-saves input
check near-softmax-saves-json 2 '\$.workload.softmax_saves: must be "output" .* (did you mean output_and_input?)' -- count --preset resnet50 --space "$top_srcdir/examples/spaces/resnet.json" --softmax-saves output_and_inputs
check softmax-saves 0 'for-loop optimizer, softmax keeps its input' -- estimate --preset gpt2 batch_size=1 --optimizer-impl for_loop --softmax-saves output_and_input
# --pytorch: a release's defaults; what is given explicitly wins, wherever --pytorch stands
check pytorch-defaults 0 'attention eager, zero_grad to zeros, for-loop optimizer, softmax keeps its input, PyTorch 1.10' -- estimate --preset gpt2 batch_size=1 --pytorch 1.10
check pytorch-explicit 0 'attention eager, for-loop optimizer, PyTorch 1.13$' -- estimate --preset gpt2 batch_size=1 --zero-grad set_to_none --pytorch 1.13
# --checkpointing where nothing is checkpointed (vgg16: no residual block, no top-level repeat;
# any model in inference) is said, on stderr and in the answer's warnings, never silently ignored
check ckpt-no-block 0 '^dnnsat: warning: checkpointing has no block to apply to in this model (a block is an iteration of a top-level repeat, or a layer item marked "checkpoint": true' -- estimate --preset vgg16 batch_size=1 --checkpointing
check_again ckpt-no-block-workload '^workload     training, fp32, adam, gradient checkpointing (no block to apply it to: nothing checkpointed)$'
check ckpt-no-block-json 0 '^    "checkpointing has no block to apply to in this model' -- estimate --preset vgg16 batch_size=1 --checkpointing --json
check ckpt-inference 0 '^dnnsat: warning: checkpointing applies to training only' -- estimate --preset resnet18 batch_size=1 --checkpointing --inference
printf '{"batch_size": {"_type": "choice", "_value": [8, 16]}}' > "$tmp/ckpt.json"
check ckpt-no-block-count 0 '^dnnsat: warning: checkpointing has no block to apply to in this model' -- count --preset vgg16 --space "$tmp/ckpt.json" --checkpointing
check ckpt-no-block-count-json 0 '"checkpointing has no block to apply to in this model' -- count --preset vgg16 --space "$tmp/ckpt.json" --checkpointing --json
# ResNet's residual blocks are checkpointed (PyTorch's bytes: test_costs), without a warning
"$DNNSAT" estimate --preset resnet18 batch_size=2 --checkpointing >"$tmp/out" 2>&1
if [ $? -eq 0 ] && ! grep -q warning "$tmp/out" && grep -q "^activations  23.7 MiB kept for backward$" "$tmp/out"; then ok; else bad ckpt-resnet; fi
# a rule of the model itself: torchvision's ViT asserts image_size % patch_size == 0
check vit-rule 1 '^  violated   $.rules\[0\]: image_size a multiple of patch, as torchvision.s VisionTransformer asserts ("Input shape indivisible by patch size!") (image_size % patch == 0) (image_size=225, patch=16)$' -- estimate --preset vit_b_16 image_size=225
# explain --json names the broken rule, as POST /v1/check's "violated" does (it dropped the list)
printf '{"image_size": {"_type": "choice", "_value": [224, 225]}}' > "$tmp/vit-space.json"
check explain-rule-json 1 '"path": "\$.rules\[0\]",' -- explain --preset vit_b_16 --space "$tmp/vit-space.json" --config '{"image_size": 225}' --json
# explain --param of a value only the rule removes names the rule (it named the model's validity alone)
check explain-value-rule 1 '^    no configuration satisfies: image_size a multiple of patch, .* (image_size % patch == 0) (\$.rules\[0\])$' -- explain --preset vit_b_16 --space "$tmp/vit-space.json" --param image_size --value 225
check pytorch-sdpa 2 '--attention: "flash" needs PyTorch 2.0 or later' -- estimate --preset gpt2 --attention flash --pytorch 1.13
check pytorch-sdpa-json 2 '\$.workload.attention: "sdpa" needs PyTorch 2.0 or later' -- count --preset resnet50 --space "$top_srcdir/examples/spaces/resnet.json" --pytorch 1.12 --attention sdpa
check bad-pytorch 2 '--pytorch: "2" is not a release such as 2.4 or 1.13' -- estimate --preset gpt2 --pytorch 2
check bad-pytorch-json 2 '\$.workload.pytorch: must be a release such as "2.4"' -- count --preset resnet50 --space "$top_srcdir/examples/spaces/resnet.json" --pytorch 2.x
check bad-grad-accum 2 "--grad-accum: \"0\" is not an integer from 1 to 65536" -- estimate --preset gpt2 --grad-accum 0
# fine-tuning: LoRA on GPT-2's fused c_attn (12 x (8 x 768 + 2304 x 8) adapters), frozen weights
check lora-estimate 0 "parameters   124,439,808, 294,912 trainable" -- estimate --preset gpt2 batch_size=1 --lora-rank 8 --lora-targets attention.qkv
check lora-json 0 '"trainable_params": 294912' -- estimate --preset gpt2 batch_size=1 --lora-rank 8 --lora-targets attention.q,attention.v --json
# the templates' lora_r (read only when the rank names it) shows the workload's rank, not its
# default 8 beside a rank of 16
check lora-config-rank 0 "^config .* lora_r=16$" -- estimate --preset gpt2 batch_size=1 --lora-rank 16 --lora-targets c_attn
check freeze-estimate 0 "parameters   124,439,808, 85,056,000 trainable" -- estimate --preset gpt2 batch_size=1 --freeze embedding
check lora-no-targets 2 "--lora-targets: LoRA needs target modules" -- estimate --preset gpt2 --lora-rank 8
check lora-bad-target 2 '^dnnsat: \$.workload.lora.targets\[0\]: unknown selector "attn": model gpt has no module of that name (did you mean c_attn?)$' -- estimate --preset gpt2 --lora-rank 8 --lora-targets attn
check lora-bad-selector 2 '^dnnsat: --lora-targets: unknown selector "q_proj.x" (did you mean q_proj?)$' -- estimate --preset gpt2 --lora-rank 8 --lora-targets q_proj.x
check lora-bad-rank 2 "--lora-rank: \"0\" is not an integer from 1 to 65536" -- estimate --preset gpt2 --lora-rank 0 --lora-targets linear
check lora-negative-rank 2 "--lora-rank: \"-1\" is not an integer from 1 to 65536" -- estimate --preset bert-base --lora-rank -1 --lora-targets attention.q
# peft's lora_dropout: each adapted linear keeps a dropped copy of its input and a bool mask
# (test_costs checks the bytes against PyTorch); it was refused ("must be 0") by the query parser
check lora-dropout 0 "LoRA rank 8 on attention.q,attention.v (dropout 0.05)" -- estimate --preset gpt2 batch_size=1 --lora-rank 8 --lora-targets attention.q,attention.v --lora-dropout 0.05
check lora-dropout-bad 2 "--lora-dropout: must be a number from 0 to below 1" -- estimate --preset gpt2 --lora-rank 8 --lora-targets linear --lora-dropout 1
check lora-dropout-alone 2 "--lora-dropout: a LoRA dropout needs LoRA" -- estimate --preset gpt2 --lora-dropout 0.1
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}}' > "$tmp/lora-b.json"
check lora-dropout-json 0 "^feasible 2 of 2 " -- count --preset gpt2 --space "$tmp/lora-b.json" --lora-rank 8 --lora-targets attention.q --lora-dropout 0.1
check lora-dropout-json-bad 2 '\$.workload.lora.dropout: must be a number from 0 to below 1' -- count --preset gpt2 --space "$tmp/lora-b.json" --lora-rank 8 --lora-targets attention.q --lora-dropout -0.5
# QLoRA: bitsandbytes' 4-bit base weights (test_costs checks the bytes against its layout);
# without a quantized linear (nothing frozen when training) the workload is refused
check qlora-estimate 0 "LoRA rank 16 on attention.q,attention.v, 4-bit nf4-dq base weights" -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype mixed_bf16 --lora-rank 16 --lora-targets attention.q,attention.v --quantize nf4-dq
check qlora-weights 0 "^  weights         4.18 GiB$" -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype mixed_bf16 --lora-rank 16 --lora-targets attention.q,attention.v --quantize nf4-dq
check qlora-inference 0 "^  weights         4.05 GiB$" -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype bf16 --inference --quantize nf4
check qlora-nothing-frozen 2 '\$.workload.quantize: no linear layer to quantize: quantized weights take no gradient' -- estimate --preset gpt2 --quantize nf4
check qlora-bad-mode 2 '--quantize: unknown mode "nf8"' -- estimate --preset gpt2 --quantize nf8
check int8-training-mode 2 "--quantize: Lightning's int8-training .* is not modelled; int8 .* is" -- estimate --preset gpt2 --quantize int8-training
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [512, 1024, 2048]}}' > "$tmp/qlora.json"
check qlora-count 0 "^feasible 6 of 12 " -- count --preset llama2-7b --space "$tmp/qlora.json" --lora-rank 16 --lora-targets attention.q,attention.v --dtype mixed_bf16 --device rtx-4090 --quantize nf4-dq
check qlora-count-plain 1 "^feasible 0 of 12 " -- count --preset llama2-7b --space "$tmp/qlora.json" --lora-rank 16 --lora-targets attention.q,attention.v --dtype mixed_bf16 --device rtx-4090
check qlora-json-bad 2 '\$.workload.quantize: must be nf4, nf4-dq, fp4, fp4-dq .* or int8' -- count --preset llama2-7b --space "$tmp/qlora.json" --lora-rank 16 --lora-targets attention.q --quantize int4
check int8-training-json 2 "\\\$.workload.quantize: Lightning's int8-training .* is not modelled" -- count --preset llama2-7b --space "$tmp/qlora.json" --lora-rank 16 --lora-targets attention.q --quantize int8-training
# LLM.int8() (bitsandbytes' Linear8bitLt): int8 weights and a scale per row; inference in fp16
# holds the linears in 6.03 GiB + the fp16 embedding and head; the 43 MiB MLP weights each take a
# 44 MiB block of the caching allocator (2 MiB rounding above 10 MiB)
check int8-estimate 0 "LoRA rank 16 on attention.q,attention.v, int8 base weights (LLM.int8())" -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype mixed_bf16 --lora-rank 16 --lora-targets attention.q,attention.v --quantize int8
check int8-inference 0 "^  weights         6.62 GiB$" -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype fp16 --inference --quantize int8
# video: the r3d template (conv3d, 3-d batch norm and adaptive pooling), torchvision's r3d_18
check r3d-params 0 "^parameters   33,371,472$" -- estimate --preset r3d_18
check r3d-macs 0 "^MACs         40,696,553,472 forward" -- estimate --preset r3d_18 batch_size=1
printf '{"dnnsat_model": 1, "name": "c", "hyperparameters": {"n": {"type": "int", "default": 2, "min": 1, "max": 8}}, "inputs": [{"name": "x", "shape": ["n", 3, 8, 32, 32]}], "layers": [{"op": "conv3d", "out_channels": 4, "kernel": [3, 3]}]}' > "$tmp/c3.json"
check conv3d-kernel-pair 2 "kernel: conv3d: must be one value or a list of 3 (depth, height, width)" -- estimate --model "$tmp/c3.json"
printf '{"batch_size": {"_type": "choice", "_value": [8, 16, 32, 64]}, "frames": {"_type": "choice", "_value": [16, 32, 64]}}' > "$tmp/r3d.json"
check r3d-count 0 "^feasible 9 of 12 " -- count --preset r3d_18 --space "$tmp/r3d.json" --device rtx-4090
check r3d-count-amp 0 "^feasible 11 of 12 " -- count --preset r3d_18 --space "$tmp/r3d.json" --device rtx-4090 --dtype mixed_fp16
# sequence to sequence: an encoder's final states (rnn_state) start the decoder (lstm inputs
# [x, h0, c0]); the states' shapes are rules, a missing c0 or a bad state name an error
cat > "$tmp/s2s.json" <<'EOF'
{"dnnsat_model": 1, "name": "s2s",
 "hyperparameters": {"batch": {"type": "int", "default": 3, "min": 1, "max": 64}, "dl": {"type": "int", "default": 2, "min": 1, "max": 4}},
 "inputs": [{"name": "src", "shape": ["batch", 7, 8], "dtype": "float"}, {"name": "tgt", "shape": ["batch", 4, 6], "dtype": "float"}],
 "layers": [
  {"op": "lstm", "input": "src", "name": "enc", "hidden_size": 16, "num_layers": 2},
  {"op": "rnn_state", "input": "enc", "name": "h", "hidden_size": 16, "num_layers": 2},
  {"op": "rnn_state", "input": "enc", "name": "c", "hidden_size": 16, "num_layers": 2, "state": "c"},
  {"op": "lstm", "inputs": ["tgt", "h", "c"], "name": "dec", "hidden_size": 16, "num_layers": "dl"},
  {"op": "linear", "out_features": 5}]}
EOF
check s2s-estimate 0 "^parameters   7,637$" -- estimate --model "$tmp/s2s.json"
check s2s-layers-rule 1 "violated   \$.layers\[3\]: h0 is \[num_layers \* directions, N, H\]: its first dimension (h0 dim 0=2, num_layers \* directions=1)" -- estimate --model "$tmp/s2s.json" dl=1
sed 's/"inputs": \["tgt", "h", "c"\]/"inputs": ["tgt", "h"]/' "$tmp/s2s.json" > "$tmp/s2s-h.json"
check s2s-no-c0 2 "\$.layers\[3\]: lstm: an LSTM's initial state is two inputs, h0 and c0" -- estimate --model "$tmp/s2s-h.json"
sed 's/"state": "c"/"state": "x"/' "$tmp/s2s.json" > "$tmp/s2s-x.json"
check s2s-bad-state 2 "\$.layers\[2\].state: rnn_state: must be \"h\"" -- estimate --model "$tmp/s2s-x.json"
# a GPU bitsandbytes cannot run it on: an invalid configuration naming the rule
check int8-v100 1 "violated   \$.workload.quantize: int8 (LLM.int8()) needs a GPU of compute capability >= 7.5" -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype fp16 --inference --quantize int8 --device v100-32gb
check int8-t4 0 "^valid        yes" -- estimate --preset tinyllama-1.1b batch_size=1 seq_len=512 --dtype fp16 --inference --quantize int8 --device t4
check nf4-maxwell 1 "violated   \$.workload.quantize: 4-bit weights need a GPU of compute capability >= 6.0" -- estimate --preset tinyllama-1.1b batch_size=1 seq_len=512 --dtype fp16 --inference --quantize nf4 --device m40-12gb
check int8-count 0 "^feasible 3 of 12 " -- count --preset llama2-7b --space "$tmp/qlora.json" --lora-rank 16 --lora-targets attention.q,attention.v --dtype mixed_bf16 --device rtx-4090 --quantize int8
# targets that match no linear, convolution or embedding layer: peft refuses them ("Target modules ... not
# found"); it was priced with every weight frozen and nothing trained (0 trainable, fits)
check lora-no-match 2 "\\$.workload.lora.targets: the LoRA targets match no linear, convolution or embedding layer" -- estimate --preset resnet18 --lora-rank 4 --lora-targets attention.q
check lora-no-match-path 2 "the LoRA targets match no linear, convolution or embedding layer" -- estimate --preset resnet18 --lora-rank 4 --lora-targets '$.layers[1]'
check lora-conv-path 0 "^parameters   11,689,512, 844 trainable$" -- estimate --preset resnet18 batch_size=8 --lora-rank 4 --lora-targets '$.layers[0]'
# LoRA on convolutions (peft's lora.Conv2d: lora_A the base's kernel, stride and padding, lora_B a
# 1x1 with its groups): resnet18's, 143,692 trainable at r 4, as PyTorch counts (test_costs);
# "conv2d" was refused as matching no linear. "all" and "all-linear" keep picking linears alone.
# DoRA on convolutions (peft's _DoraConvNdLayer; it was refused): a magnitude per output channel,
# 148,492 trainable as PyTorch counts (test_costs), and with a dropout the convolution run again on
# the dropped input shares the base weight (not counted twice); a space's use_dora and
# lora_dropout per configuration on a T4: 10 of 16 fit 8 GiB, as the sixteen point queries say
# (DoRA at batch 128 6.58 GiB with dropout, batch 256 9.98 GiB without), and Z3 agrees
check lora-conv 0 "^parameters   11,689,512, 143,692 trainable$" -- estimate --preset resnet18 batch_size=8 --lora-rank 4 --lora-targets conv2d
check lora-conv-all 0 "^parameters   11,689,512, 6,048 trainable$" -- estimate --preset resnet18 batch_size=8 --lora-rank 4 --lora-targets all
# peft's all-linear on torchvision's ViT: every nn.Linear module (out_proj, mlp.0, mlp.3 and, the
# model not being a Hugging Face PreTrainedModel, heads.head), never nn.MultiheadAttention's
# in_proj_weight, a parameter: 12 x (12,288 + 2 x 30,720) + 14,144 at r 8 (1,193,792 before,
# with the in-projection adapted); attention.qkv still names it
check vit-lora-all-linear 0 "^parameters   86,567,656, 898,880 trainable$" -- estimate --preset vit_b_16 --lora-rank 8 --lora-targets all-linear
check vit-lora-qkv 0 "^parameters   86,567,656, 294,912 trainable$" -- estimate --preset vit_b_16 --lora-rank 8 --lora-targets attention.qkv
# nn.PReLU's slopes: one, or one per channel (its forward raises otherwise)
printf '{"dnnsat_model": 1, "name": "p", "hyperparameters": {"batch": {"type": "int", "default": 2}, "slopes": {"type": "int", "default": 16}}, "inputs": [{"name": "x", "shape": ["batch", 16, 8, 8]}], "layers": [{"op": "prelu", "num_parameters": "slopes"}]}' >"$tmp/prelu.json"
check prelu-channels 1 "^  violated   \$.layers\[0\]: num_parameters is 1 or the input.s channels .dim 1., as nn.PReLU checks .num_parameters=3.$" -- estimate --model "$tmp/prelu.json" slopes=3
check prelu-per-channel 0 "^parameters   16$" -- estimate --model "$tmp/prelu.json"
# peft adapts in_proj_weight only through lora.MultiheadAttention, which refuses DoRA (its
# out_proj, an nn.Linear, takes DoRA under all-linear)
check vit-dora-in-proj 1 "^  violated   \$.layers\[6\]\[0\].body\[0\].branches\[0\]\[1\].in_proj: no DoRA on a weight that is no nn.Linear module.s .nn.MultiheadAttention.s in_proj_weight.: peft.s lora.MultiheadAttention raises ValueError" -- estimate --preset vit_b_16 --lora-rank 8 --lora-targets attention.qkv --use-dora
check vit-dora-all-linear 0 "^valid        yes$" -- estimate --preset vit_b_16 --lora-rank 8 --lora-targets all-linear --use-dora
printf '{"batch_size": {"_type": "choice", "_value": [8, 16, 32]}, "use_dora": {"_type": "choice", "_value": [true, false]}}' >"$tmp/vitdora.json"
check space-vit-dora-in-proj 0 "^feasible 3 of 6 configurations" -- count --preset vit_b_16 --lora-rank 8 --lora-targets attention.qkv --space "$tmp/vitdora.json" --budget memory=40GiB --engine z3 --timeout 600
check_again space-vit-dora-in-proj-z3 "^         agrees with the engine's count$"
# bitsandbytes replaces nn.Linear modules: the in-projection (in_proj_weight) stays bf16,
# 12 x 1,769,472 values (72.8 MiB of weights when it was quantized as a linear)
check vit-qlora-in-proj 0 "^  weights        109.4 MiB$" -- estimate --preset vit_b_16 --lora-rank 8 --lora-targets all-linear --quantize nf4 --dtype bf16
check lora-conv-dora 0 "^parameters   11,689,512, 148,492 trainable$" -- estimate --preset resnet18 batch_size=8 --lora-rank 4 --lora-targets conv2d --use-dora
check lora-conv-dora-dropout 0 "^parameters   11,689,512, 148,492 trainable$" -- estimate --preset resnet18 batch_size=8 --lora-rank 4 --lora-targets conv2d --use-dora --lora-dropout 0.1
printf '{"batch_size": {"_type": "choice", "_value": [64, 128, 256, 512]}, "use_dora": {"_type": "choice", "_value": [true, false]}, "lora_dropout": {"_type": "choice", "_value": [0.0, 0.1]}}' >"$tmp/cdora.json"
CDQ="--preset resnet18 --lora-rank 4 --lora-targets conv2d --device t4 --dtype mixed_fp16"
check space-conv-dora 0 "^feasible 10 of 16 configurations" -- count $CDQ --budget memory=8GiB --space "$tmp/cdora.json" --engine z3 --timeout 600
check_again space-conv-dora-z3 "^         agrees with the engine's count$"
check conv-dora-128 0 "^memory       6.58 GiB training peak" -- estimate $CDQ batch_size=128 --use-dora --lora-dropout 0.1
check conv-dora-256 0 "^memory       9.98 GiB training peak" -- estimate $CDQ batch_size=256 --use-dora
# the example of LoRA and DoRA on resnet50's convolutions on a T4 (examples/api/cnn-lora-dora-query.json):
# 32 of 48 fit 14 GiB (at r 8, batch 128 fits with LoRA, 7.82 GiB, not with DoRA, 14.44 GiB)
check space-cnn-dora-example 0 "^feasible 32 of 48 configurations" -- count "$top_srcdir/examples/api/cnn-lora-dora-query.json"
check cnn-dora-128 0 "^memory       14.44 GiB training peak" -- estimate --preset resnet50 --device t4 --dtype mixed_fp16 --lora-rank 8 --lora-targets conv2d batch_size=128 --use-dora
# LoRA on embeddings (peft's lora.Embedding: A [r, num], B [dim, r], no dropout), by the module
# names peft gives them (the templates' embeddings carry them now) or by kind: TinyLlama's
# embed_tokens at r 8, 32,000 x 8 + 8 x 2,048 = 272,384 trainable as PyTorch counts (test_costs);
# GPT-2's wte (tied to lm_head, which stays frozen) and BERT's word_embeddings beside query, value;
# DoRA on it (peft's DoraEmbeddingLayer; it was refused): a magnitude per embedding dimension,
# 272,384 + 2,048 trainable
check lora-embedding 0 "^parameters   1,100,048,384, 272,384 trainable$" -- estimate --preset tinyllama-1.1b --lora-rank 8 --lora-targets embed_tokens batch_size=2 seq_len=256
check lora-embedding-gpt2 0 "^parameters   124,439,808, 408,200 trainable$" -- estimate --preset gpt2 --lora-rank 8 --lora-targets wte batch_size=2
check lora-embedding-bert 0 "^parameters   109,482,240, 545,232 trainable$" -- estimate --preset bert-base --lora-rank 8 --lora-targets word_embeddings,query,value
check lora-embedding-dora 0 "^parameters   1,100,048,384, 274,432 trainable$" -- estimate --preset tinyllama-1.1b --lora-rank 8 --lora-targets embed_tokens --use-dora batch_size=2 seq_len=256
# peft's target_modules names: q_proj/k_proj/v_proj/o_proj (LLaMA), query/key/value (BERT), c_attn
# (GPT-2) are the attention projections, gate_proj/up_proj/down_proj the SwiGLU MLP's linears, and
# all-linear every linear but the output layer. LLaMA-2-7B, r 16 on all-linear: 39,976,960 trainable,
# what peft's print_trainable_parameters says for it (every linear: 40,554,496, lm_head's adapters
# too); TinyLlama r 8 on q_proj,v_proj: 1,126,400, as attention.q,attention.v (they were refused)
check lora-peft-all-linear 0 "^parameters   6,738,415,616, 39,976,960 trainable$" -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype mixed_bf16 --lora-rank 16 --lora-targets all-linear --quantize nf4-dq --device rtx-4090
check lora-peft-seven 0 "^parameters   6,738,415,616, 39,976,960 trainable$" -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype mixed_bf16 --lora-rank 16 --lora-targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj --quantize nf4-dq --device rtx-4090
check lora-peft-linear 0 "^parameters   6,738,415,616, 40,554,496 trainable$" -- estimate --preset llama2-7b batch_size=1 seq_len=512 --dtype mixed_bf16 --lora-rank 16 --lora-targets linear --quantize nf4-dq --device rtx-4090
check lora-peft-qv 0 "^parameters   1,100,048,384, 1,126,400 trainable$" -- estimate --preset tinyllama-1.1b --lora-rank 8 --lora-targets q_proj,v_proj
check lora-peft-bert 0 "^parameters   109,482,240, 294,912 trainable$" -- estimate --preset bert-base --lora-rank 8 --lora-targets query,value
check lora-peft-typo 2 '^dnnsat: \$.workload.lora.targets\[0\]: unknown selector "q_projj": model llama has no module of that name (did you mean q_proj, k_proj or v_proj?)$' -- estimate --preset tinyllama-1.1b --lora-rank 8 --lora-targets q_projj
# module names, as peft matches a module whose name ends with the target (they were refused as
# unknown selectors): GPT-2's MLP c_fc and c_proj (c_proj is the attention's output projection too,
# both GPT-2 modules are named so); r 8 on c_attn,c_proj,c_fc, the common recipe: 12 x 8 x ((768 +
# 2304) + (768 + 768) + (768 + 3072) + (3072 + 768)) = 1,179,648, as all-linear (the tied lm_head
# takes none); c_proj alone 12 x 8 x (1536 + 3840); BERT's dense (attention output, intermediate,
# output, pooler): 12 x 8 x (1536 + 3840 + 3840) + 8 x 1536; all-linear on BertModel adapts the
# pooler too (peft leaves out get_output_embeddings() only, and BertModel has none: 1,339,392,
# was 1,327,104), on a torchvision ResNet its fc (was refused: no linear); ResNet's fc by name; a
# name that is no module of the model is refused with the closest (freeze and train too)
check lora-module-gpt2 0 "^parameters   124,439,808, 1,179,648 trainable$" -- estimate --preset gpt2 --lora-rank 8 --lora-targets c_attn,c_proj,c_fc
check lora-module-c-proj 0 "^parameters   124,439,808, 516,096 trainable$" -- estimate --preset gpt2 --lora-rank 8 --lora-targets c_proj
check lora-module-bert-dense 0 "^parameters   109,482,240, 897,024 trainable$" -- estimate --preset bert-base --lora-rank 8 --lora-targets dense
check lora-module-bert-all-linear 0 "^parameters   109,482,240, 1,339,392 trainable$" -- estimate --preset bert-base --lora-rank 8 --lora-targets all-linear
check lora-module-resnet-all-linear 0 "^parameters   25,557,032, 24,384 trainable$" -- estimate --preset resnet50 --lora-rank 8 --lora-targets all-linear
check lora-module-train-fc 0 "^parameters   25,557,032, 2,049,000 trainable$" -- estimate --preset resnet50 --freeze all --train fc
# a tied linear that trains trains the weight it shares (PyTorch's requires_grad is the Parameter's,
# and GPT-2's lm_head.weight is wte.weight): its gradient and optimizer state count, 38,597,376
# trainable as sum(p.numel() for p in model.parameters() if p.requires_grad) says after
# model.requires_grad_(False); model.lm_head.weight.requires_grad_(True) (before: 0 trainable, and
# 6.92 GiB without wte's gradient and Adam state); every linear: 85,017,600 + 38,597,376
check tied-train-lm-head 0 "^parameters   124,439,808, 38,597,376 trainable$" -- estimate --preset gpt2 --freeze all --train lm_head
"$DNNSAT" estimate --preset gpt2 --freeze all --train lm_head >"$tmp/out" 2>&1
if grep -q "^  optimizer" "$tmp/out"; then ok; else bad "tied-train-lm-head: no optimizer state"; fi
check tied-train-linear 0 "^parameters   124,439,808, 123,614,976 trainable$" -- estimate --preset gpt2 --freeze all --train linear
# the other direction: freezing the tied lm_head while wte trains leaves the one Parameter
# trainable (named_parameters() lists it once, as wte's), so lm_head takes its gradient and keeps
# its input for it: full fine-tuning's 9.61 GiB kept (before: every weight trainable, but lm_head
# keeping nothing, 9.58 GiB)
check tied-freeze-lm-head 0 "^activations  9.61 GiB kept for backward$" -- estimate --preset gpt2 batch_size=8 --freeze lm_head
# training the tied lm_head trains wte, whose output then needs a gradient: everything after it
# keeps its activations, 7.92 GiB at batch 8 as --train wte says (before: 1.56 GiB, the model
# built with wte frozen and only its gradient and Adam state added afterwards, 6.4 GiB low);
# freezing wte freezes the Parameter, so lm_head, which nothing picks, stays frozen with it
# (85,842,432 trainable: all but wte; before, every weight trainable)
check tied-train-lm-head-kept 0 "^activations  7.92 GiB kept for backward$" -- estimate --preset gpt2 batch_size=8 --freeze all --train lm_head
check tied-train-wte-kept 0 "^activations  7.92 GiB kept for backward$" -- estimate --preset gpt2 batch_size=8 --freeze all --train wte
check tied-freeze-wte 0 "^parameters   124,439,808, 85,842,432 trainable$" -- estimate --preset gpt2 batch_size=8 --freeze wte
check lora-module-typo 2 '^dnnsat: \$.workload.freeze\[0\]: unknown selector "c_fcc": model gpt has no module of that name (did you mean c_fc?)$' -- estimate --preset gpt2 --freeze c_fcc
printf '{"batch_size": {"_type": "choice", "_value": [1, 8]}, "target_modules": {"_type": "choice", "_value": ["c_attn", "c_attn,mlp_in"]}}' >"$tmp/tgtmod.json"
check lora-module-space-typo 2 '^dnnsat: \$.space.target_modules._value\[1\]: unknown selector "mlp_in": model gpt has no module of that name' -- count --preset gpt2 --lora-rank 8 --lora-targets c_attn --space "$tmp/tgtmod.json"
# a model file names its layers' modules with "module" (a name: letters, digits, underscores)
printf '{"dnnsat_model": 1, "name": "m", "inputs": [{"name": "x", "shape": [8, 16]}], "layers": [{"op": "linear", "out_features": 32, "module": "ffn_in"}, {"op": "relu"}, {"op": "linear", "out_features": 4, "module": "head"}]}' >"$tmp/modnames.json"
check model-module-lora 0 "^parameters   676, 384 trainable$" -- estimate --model "$tmp/modnames.json" --lora-rank 8 --lora-targets ffn_in
sed 's/"ffn_in"/"mlp.0"/' "$tmp/modnames.json" >"$tmp/modbad.json"
check model-module-bad 2 '^dnnsat: \$.layers\[0\]: "module" must be a name of letters, digits and underscores (not starting with a digit), at most 63 characters$' -- estimate --model "$tmp/modbad.json"
check flash-on-v100 1 "flash attention needs compute capability >= 8.0" -- estimate --preset gpt2 --device v100-32gb --dtype mixed_fp16 --attention flash
check bf16-on-v100 1 "bf16 needs a GPU with bf16 arithmetic" -- estimate --preset gpt2 --device v100-32gb --dtype mixed_bf16
check sdpa-resolved 0 "attention sdpa (flash here)" -- estimate --preset gpt2 batch_size=1 --dtype mixed_bf16
# a space searches the LoRA rank through the template's lora_r: at batch 4 rank 256 needs 7.77 GiB, rank 64 7.18 GiB
printf '{"lora_r": {"_type": "choice", "_value": [1, 4, 8, 16, 64, 256]}, "batch_size": {"_type": "choice", "_value": [1, 2, 4, 8, 16]}}' > "$tmp/lora.json"
check lora-rank-searched 0 "^feasible 17 of 30 " -- count --preset gpt2 --space "$tmp/lora.json" --device t4 --dtype mixed_fp16 --lora-rank lora_r --lora-targets linear --budget memory=7.5GiB
# the attention kernel is named only for models that have attention layers
check mlp-workload 0 "^workload     training, fp32, adam$" -- estimate --preset mnist_mlp --device t4
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
# Q0: without budgets, for checks that give their own (a budget given twice is refused)
Q0="--preset mnist_mlp --space $SP --device t4"
Q="$Q0 --budget memory=3GiB --budget params=5M"
QM="$Q0 --budget params=5M"     # Q without its memory budget
QP="$Q0 --budget memory=3GiB"   # Q without its params budget
check solver-bad-grad-accum 2 "\$.workload.grad_accum: must be an integer" -- count $Q --grad-accum x
check solver-bad-lora-target 2 "\$.workload.lora.targets\[0\]: unknown selector \"lin\"" -- count $Q --lora-rank 4 --lora-targets lin
check solver-freeze 0 "feasible" -- count $Q --freeze linear --train '$.layers[3]'
check count 0 "feasible 528 of 1536 configurations (34.38%), exact" -- count $Q
check count-json 0 '"feasible": "528"' -- count $Q --json
# a complete NNI parameter set: learning_rate (loguniform, passes through) at
# its geometric midpoint sqrt(0.0001 * 0.1) in pages
check list-first 0 '{"batch_size":32,"hidden":256,"depth":1,"activation":"relu","learning_rate":0.00316227766016838}' -- list $Q --limit 1
"$DNNSAT" list $Q --limit 2 >/dev/null 2>"$tmp/cursor"
cursor=$(sed -n 's/^next cursor: //p' "$tmp/cursor")
# the page after the cursor is the third configuration (listing order: the engine's
# variable order, categorical dims first)
third=$("$DNNSAT" list $Q --offset 2 --limit 1 2>/dev/null)
check list-cursor 0 "^$third\$" -- list $Q --limit 1 --cursor "$cursor"
check list-offset 0 '"batch_size"' -- list $Q --offset 527 --limit 5
# past the last configuration: an empty page (exit 0: something fits) and why, as the API's 200
check list-past-end 0 "^dnnsat: no configuration at --offset 528: 528 fit$" -- list $Q --offset 528 --limit 1
check sample 0 '"hidden"' -- sample $Q --n 5 --seed 3
# --seed is an integer of 64 bits, checked as --n is (junk, hex, negatives, fractions and
# overflow read as some other seed, exit 0)
for seed in abc 0x10 -1 1.5 18446744073709551616 "" " 7"; do
	check "seed-bad-$seed" 2 "^dnnsat: --seed: \"$seed\" is not an integer from 0 to 18446744073709551615$" -- sample $Q --n 1 --seed "$seed"
done
check seed-max 0 '"hidden"' -- sample $Q --n 1 --seed 18446744073709551615
# samples draw learning_rate from its loguniform: in range, the same for the same seed
"$DNNSAT" sample $Q --n 20 --seed 3 >"$tmp/s1" 2>/dev/null
"$DNNSAT" sample $Q --n 20 --seed 3 >"$tmp/s2" 2>/dev/null
"$DNNSAT" sample $Q --n 20 --seed 4 >"$tmp/s3" 2>/dev/null
if [ "$(sed -n 's/.*"learning_rate":\([0-9.e-]*\)}$/\1/p' "$tmp/s1" |
    awk '$1 >= 0.0001 && $1 <= 0.1 { n++ } END { print n + 0 }')" -eq 20 ] && cmp -s "$tmp/s1" "$tmp/s2" &&
    ! cmp -s "$tmp/s1" "$tmp/s3" && [ "$(grep -o '"learning_rate":[^}]*' "$tmp/s1" | sort -u | wc -l)" -gt 15 ]; then
	ok
else
	cp "$tmp/s1" "$tmp/out"
	bad "sample-continuous: learning_rate drawn in [0.0001, 0.1], seeded"
fi
# a nested continuous parameter only where its option is chosen; lognormal at exp(mu)
printf '{"batch_size": {"_type": "choice", "_value": [32]}, "layer1": {"_type": "choice", "_value": [{"_name": "Empty"}, {"_name": "Conv", "drop": {"_type": "uniform", "_value": [0, 0.5]}}]}, "mom": {"_type": "lognormal", "_value": [0, 1]}}' >"$tmp/nested.json"
NQ="--preset mnist_mlp --space $tmp/nested.json --device t4"
check list-nested-inactive 0 '^{"batch_size":32,"layer1":{"_name":"Empty"},"mom":1.0}$' -- list $NQ
check list-nested-active 0 '^{"batch_size":32,"layer1":{"_name":"Conv","drop":0.25},"mom":1.0}$' -- list $NQ
# choice values of any JSON type (NNI's own tests' mixed list, BatchTuner's plain objects)
printf '{"batch_size": {"_type": "choice", "_value": [32, 64]}, "mixed": {"_type": "choice", "_value": [0.5, "cat", 1, null]}, "combine_params": {"_type": "choice", "_value": [{"optimizer": "Adam", "lr": 0.001}, {"optimizer": "SGD", "lr": 0.01}]}, "shape": {"_type": "choice", "_value": [[1, 2], [3]]}}' >"$tmp/mixed.json"
MQ="--preset mnist_mlp --space $tmp/mixed.json --device t4"
check mixed-count 0 "feasible 32 of 32 configurations" -- count $MQ
check mixed-list 0 '^{"batch_size":32,"mixed":null,"combine_params":{"optimizer":"SGD","lr":0.01},"shape":\[3\]}$' -- list $MQ
check mixed-reduce 0 '"combine_params"' -- reduce $MQ
check mixed-explain-null 0 "mixed = null is kept" -- explain $MQ --param mixed --value null
check mixed-explain-object 0 'combine_params = {"optimizer": "SGD", "lr": 0.01} is kept' -- explain $MQ --param combine_params --value '{"optimizer": "SGD", "lr": 0.01}'
check mixed-explain-list 0 'shape = \[3\] is kept' -- explain $MQ --param shape --value '[3]'
check mixed-explain-absent 2 'value: not a value of "shape"' -- explain $MQ --param shape --value '[4]'
check mixed-check 0 "feasible" -- explain $MQ --config '{"batch_size": 64, "mixed": null, "combine_params": {"lr": 0.001, "optimizer": "Adam"}, "shape": [1, 2]}'
check reduce 0 "\"_type\": \"randint\"" -- reduce $Q --budget macs=20M
# past the deadline the space keeps every value that may fit: batch 16 and seq_len 1024 fit
# (until 2026-12-05 only certified values were kept: batch_size [4], while batch 16 fits)
# 13.5 GiB (90 % of the T4 until its usable memory became torch's 14.56 GiB): a budget where
# max and explain take minutes (at 13.1 GiB max answers in 0.4 s)
T24="--model $top_srcdir/examples/models/transformer24.json --space $top_srcdir/examples/spaces/transformer24.json --device t4 --budget memory=13.5GiB"
check reduce-deadline 3 "values in undecided regions were kept" -- reduce $T24 --timeout 0.4
if sed -n '/^{/,/^}/p' "$tmp/out" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if 16 in d["batch_size"]["_value"] and 1024 in d["seq_len"]["_value"] else 1)'; then ok; else bad "reduce-deadline: batch_size 16 or seq_len 1024 left out"; fi
# the deadline is exit status 3 for every solver command, and its message names no option
check max-deadline 3 "^dnnsat: the largest value did not finish in 0.3 s$" -- max $T24 --param batch_size --timeout 0.3
check explain-deadline 3 "^dnnsat: the search did not finish before the deadline$" -- explain $T24 --param batch_size --value 32 --timeout 0.3
# one query file; an option another command reads is refused, not dropped
check two-query-files 2 "a second query file (the query is" -- count "$top_srcdir/examples/api/reduction-query.json" "$top_srcdir/examples/api/mlp-query.json"
check option-of-other-command 2 "^dnnsat: --cursor: not an option of count (list takes it)$" -- count $Q --cursor xyz
check option-of-other-commands 2 "^dnnsat: --param: not an option of list (explain, max and min take it)$" -- list $Q --param hidden
# --limit 0 is refused (it printed a cursor and exit status 1)
check list-limit-0 2 "^dnnsat: --limit: must be a count from 1" -- list $Q --limit 0
check max-per 0 "depth = 8: largest batch_size" -- max $Q --param batch_size --per depth
check min-per 0 "depth = 3: smallest hidden = 768" -- min $Q --constraint "hidden * depth >= 2048" --param hidden --per depth
check min-json 0 '"hidden": 1024' -- min $Q --constraint "hidden >= 1000" --param hidden --json
# nothing feasible: exit 1, as count's (the help's "1 nothing feasible"; it was 0)
check min-none-fits 1 "smallest hidden = none fits" -- min $QM --budget memory=1KiB --param hidden
check min-none-fits-per 1 "depth = 3: smallest hidden = none fits" -- min $QM --budget memory=1KiB --param hidden --per depth
check max-none-fits-json 1 '"batch_size": null' -- max $QM --budget memory=1KiB --param batch_size --json
check min-no-param 2 "min: give --param NAME" -- min $Q
check min-unknown 2 "--param: the space has no parameter \"nope\"" -- min $Q --param nope
check max-no-order 2 "--param: \"activation\" has values that are not numbers" -- max $Q --param activation
check min-no-order 2 "--param: \"activation\" has values that are not numbers" -- min $Q --param activation
check min-passthrough 0 "smallest learning_rate = 0.0001" -- min $Q --param learning_rate
check max-passthrough-none 1 "largest learning_rate = none fits" -- max $QM --budget memory=1KiB --param learning_rate
check per-continuous 2 "--per: \"learning_rate\" is continuous (loguniform): one row per value" -- max $Q --param depth --per learning_rate
# a width multiplier bound to the model: exact on its grid of 1025 values.
# 2110 MiB leaves the model 747 MiB above the T4's expected CUDA context and
# cuBLAS workspace (1343 + 20 MiB), as 2 GiB did while the context was read
# as 1343 MB (at 2 GiB now the supremum is 1.111, and Z3 runs out)
MW="--template mobilenet_v2 --space $top_srcdir/examples/spaces/mobilenet-width.json --device t4 --budget memory=2110MiB"
check max-continuous 0 "largest width_mult = 1.311279296875" -- max $MW --param width_mult
check max-continuous-per 0 "batch_size = 32: largest width_mult = 0.555419921875" -- max $MW --param width_mult --per batch_size
check explain-continuous-kept 0 "width_mult = 1.3113 is kept" -- explain $MW --param width_mult --value 1.3113
check explain-continuous-removed 1 "width_mult = 1.32 is removed: no configuration with it satisfies" -- explain $MW --param width_mult --value 1.32
# its exact range over the reals (Z3): the supremum 1.3125 lies between grid values
check count-z3-range 0 "z3 range width_mult: infimum in .0.25, 0.25., supremum in .1.31249999953434, 1.31250000162981., exact; grid hull .0.25, 1.3134765625." -- count $MW --engine z3 --timeout 600
# nested in an option beside one at the default width: the range over the configurations in which it
# takes part, the same (it was "not computed"; unrestricted, the default option made every value fit)
printf '{"batch_size": {"_type": "choice", "_value": [16, 32, 64, 128, 256]}, "resolution": {"_type": "choice", "_value": [128, 160, 192, 224]}, "arch": {"_type": "choice", "_value": [{"_name": "default"}, {"_name": "scaled", "width_mult": {"_type": "uniform", "_value": [0.25, 2.5]}}]}}' >"$tmp/mwnest.json"
check count-z3-range-nested 0 "z3 range arch/scaled/width_mult: infimum in .0.25, 0.25., supremum in .1.31249999953434, 1.31250000162981., exact; grid hull .0.25, 1.3134765625." -- count --template mobilenet_v2 --device t4 --budget memory=2110MiB --space "$tmp/mwnest.json" --engine z3 --timeout 600
check explain-continuous-range 2 "--value: 3 is outside the range of \"width_mult\"" -- explain $MW --param width_mult --value 3
check min-per-itself 2 "--per: \"depth\" is param itself" -- min $Q --param depth --per depth
check help-min 0 "min  *the smallest feasible value" -- --help
check explain-config 1 "^FAIL memory 7.67 GiB > 3 GiB$" -- explain $Q --config '{"batch_size": 16384, "hidden": 4096, "depth": 8, "activation": "gelu"}'
# human units in text, the exact numbers in JSON
EC='{"batch_size": 16384, "hidden": 4096, "depth": 8, "activation": "gelu"}'
check explain-config-params 1 "^FAIL params 120.7M > 5M$" -- explain $Q --config "$EC"
check explain-config-latency 1 "^FAIL latency 609 ms > 1 ms$" -- explain $Q --budget latency=1ms --config "$EC"
check explain-config-utilization 1 "^ok   utilization 99.4% >= 50%$" -- explain $Q --budget min_utilization=0.5 --config "$EC"
check explain-config-json 1 '"value": 8238385152,' -- explain $Q --config "$EC" --json
check explain-kept 0 "is kept" -- explain $Q --param hidden --value 512
check explain-removed 1 "is removed: no configuration with it satisfies" -- explain $QP --budget params=100K --param hidden --value 4096

# nested options with children of one key: one address each ("choice/option/key"); the
# short form "choice/key" only where one parameter has it
cat > "$tmp/nest.json" <<'EOF'
{"batch_size": {"_type": "choice", "_value": [8, 16]},
 "attention": {"_type": "choice", "_value": [
    {"_name": "few_heads", "n_head": {"_type": "choice", "_value": [4, 8]}},
    {"_name": "many_heads", "n_head": {"_type": "choice", "_value": [12, 16, 20]}}]}}
EOF
N="--preset gpt2 --space $tmp/nest.json --device a100-40gb --budget memory=40GiB --attention eager"
check nest-list 0 '^{"batch_size":8,"attention":{"_name":"many_heads","n_head":16}}$' -- list $N
check nest-ambiguous 2 '--param: attention/n_head is ambiguous: attention/few_heads/n_head or attention/many_heads/n_head' -- max $N --param attention/n_head
check nest-max 0 '^largest attention/many_heads/n_head = 16$' -- max $N --param attention/many_heads/n_head
check nest-max-few 0 '^largest attention/few_heads/n_head = 8$' -- max $N --param attention/few_heads/n_head
check nest-max-per 0 '^batch_size = 16: largest attention/many_heads/n_head = none fits$' -- max $N --param attention/many_heads/n_head --per batch_size
check nest-min-per 0 '^attention/many_heads/n_head = 16: smallest batch_size = 8$' -- min $N --param batch_size --per attention/many_heads/n_head
check nest-max-json 0 '"attention/many_heads/n_head": 16' -- max $N --param attention/many_heads/n_head --json
check nest-per-ambiguous 2 '--per: attention/n_head is ambiguous' -- max $N --param batch_size --per attention/n_head
check nest-explain-20 1 '^attention/many_heads/n_head = 20 is removed: no configuration with it satisfies' -- explain $N --param attention/many_heads/n_head --value 20
check nest-explain-20-json 1 '"param": "attention/many_heads/n_head"' -- explain $N --param attention/many_heads/n_head --value 20 --json
check nest-explain-16 0 '^attention/many_heads/n_head = 16 is kept' -- explain $N --param attention/many_heads/n_head --value 16
check nest-explain-not-value 2 '--value: not a value of "attention/few_heads/n_head"' -- explain $N --param attention/few_heads/n_head --value 20
check nest-explain-ambiguous 2 '--param: attention/n_head is ambiguous' -- explain $N --param attention/n_head --value 20
sed 's/"_value": \[12, 16, 20\]}/&, "n_layer": {"_type": "choice", "_value": [2, 4]}/' "$tmp/nest.json" > "$tmp/nest2.json"
N2="--preset gpt2 --space $tmp/nest2.json --device a100-40gb --budget memory=40GiB"
check nest-short-unique 0 '^largest attention/many_heads/n_layer = 4$' -- max $N2 --param attention/n_layer
check nest-explain-short 0 '^attention/many_heads/n_layer = 2 is kept' -- explain $N2 --param attention/n_layer --value 2
check nest-unknown 2 '--param: the space has no parameter "attention/few_heads/n_layer"' -- max $N --param attention/few_heads/n_layer
printf '{"a": {"_type": "choice", "_value": [{"_name": "x", "b": {"_type": "choice", "_value": [1]}}]}, "a/x/b": {"_type": "choice", "_value": [2]}}' > "$tmp/collide.json"
check nest-collision 2 '$.space\["a/x/b"\]: the parameter.s address "a/x/b" is also the address of \$.a._value\[0\].b' -- count --preset gpt2 --space "$tmp/collide.json"
check nothing-fits 1 "feasible 0 of" -- count $QM --budget memory=1KiB
# Z3 in count (solver/z3/answer_z3.h): --engine z3 cross-checks the count by
# enumeration; when nothing fits, the conflicting budgets and how far they must move
# (--timeout 600: Z3 is bounded by its resource limit here, the same work on any
# machine; the default 60 s deadline, shared among the checks, cut it short under ASan on a busy one)
check engine-z3-json 0 '"agrees": true' -- count $Q --engine z3 --json --timeout 600
check_again engine-z3-models '"models": 528,'
check engine-z3-text 0 "^z3       528 configurations by enumeration with blocking clauses, complete$" -- count $Q --engine z3 --timeout 600
check engine-bnb-no-z3 0 "^feasible 528 of 1536" -- count $Q --engine bnb
if grep -q '^z3 ' "$tmp/out"; then bad "engine-bnb: no Z3 enumeration"; else ok; fi
check engine-unknown 2 '^dnnsat: \$.engine: must be "bnb"' -- count $Q --engine foo
check engine-no-value 2 "^dnnsat: --engine: needs a value" -- count $Q --engine
check conflict-text 1 "^  memory <= 100 MiB  (something fits from 1.3[0-9][0-9] GiB)$" -- count $Q0 --budget memory=100MiB --budget params=1M --timeout 600
check conflict-no-z3-core 1 "^  memory <= 100 MiB" -- count $Q0 --budget memory=100MiB --budget params=1M --engine bnb
if grep -q '^z3 ' "$tmp/out"; then bad "conflict-no-z3-core: a Z3 core without --engine z3"; else ok; fi
check conflict-z3-core 1 '^z3       core: \$.budgets.memory$' -- count $Q0 --budget memory=100MiB --budget params=1M --engine z3 --timeout 600
check_again conflict-z3-agrees "^         Z3's unsat core is a minimal conflict by the engine's checks too"
# the model's validity alone: the rule no configuration satisfies, named
printf '{"hidden": {"_type": "choice", "_value": [100, 130]}}\n' >"$tmp/bad_hidden.json"
check conflict-rules 1 '^    no configuration satisfies: heads divides the embedding size (\$.layers\[7\]\[0\][^ ]* and 11 more places)$' -- count --template bert --space "$tmp/bad_hidden.json" --device t4
# past the first 8 rules named: how many more fail; past the 64 distinct rules
# checked: said (70 1x1 convolutions of groups g in {2, 3}, channels 60 .. 130)
/usr/bin/python3 -c '
import json, sys
layers = [{"op": "conv2d", "out_channels": 61 + k, "kernel": 1, "groups": "g"} for k in range(70)]
hp = {"batch_size": {"type": "int", "default": 8, "min": 1, "max": 64},
      "g": {"type": "int", "default": 2, "min": 1, "max": 8}}
json.dump({"dnnsat_model": 1, "name": "groups_chain", "hyperparameters": hp,
           "inputs": [{"name": "x", "shape": ["batch_size", 60, 8, 8]}], "layers": layers}, open(sys.argv[1], "w"))
' "$tmp/groups_chain.json"
printf '{"g": {"_type": "choice", "_value": [2, 3]}}\n' >"$tmp/groups.json"
check conflict-rules-more 1 '^    and 14 more rules that no configuration satisfies$' -- count --model "$tmp/groups_chain.json" --space "$tmp/groups.json" --device t4
check_again conflict-rules-cap '^    (rules checked: the first 64 distinct ones'
# two rules of one (constant) condition are two rules: flash attention on a V100 in fp32
printf '{"batch_size": {"_type": "choice", "_value": [8, 16]}}\n' >"$tmp/bs.json"
check explain-repeats 1 '^     $.layers\[7\]\[0\][^ ]*: flash attention needs fp16 or bf16 (dtype is fp32) (and 3 more places)$' -- explain --preset bert-base --space "$tmp/bs.json" --device v100-16gb --attention flash --config '{"batch_size": 8}'
check_again explain-repeats-first-8 '^     (the first 8 violations: `dnnsat estimate` counts them all)$'
check conflict-rules-dtype 1 '^    no configuration satisfies: flash attention needs fp16 or bf16 (dtype is fp32) (\$.layers\[7\]\[0\][^ ]* and 11 more places)$' -- count --preset bert-base --space "$tmp/bs.json" --device v100-16gb --attention flash
check conflict-json 1 '"path": "$.budgets.memory",' -- count $Q0 --budget memory=100MiB --budget params=1M --json --timeout 600
check_again conflict-json-at-least '"at_least": [0-9]*,'
# the bracket, by the engine itself: something fits at at_least, nothing at nothing_at
cp "$tmp/out" "$tmp/cf"
least=$(sed -n 's/^ *"at_least": \([0-9]*\),*$/\1/p' "$tmp/cf")
none=$(sed -n 's/^ *"nothing_at": \([0-9]*\),*$/\1/p' "$tmp/cf")
check conflict-fits-at-least 0 "^feasible [1-9][0-9]* of 1536" -- count $Q0 --budget "memory=${least:-0}B" --budget params=1M
check conflict-none-at-nothing-at 1 "^feasible 0 of 1536" -- count $Q0 --budget "memory=${none:-0}B" --budget params=1M
# the limit at the budget's precision (1.96 beside 1.963 looked like a contradiction), and
# every digit where the two would read the same
check_again conflict-exact-limit "^  memory <= [0-9.]* GiB  (something fits from ${least:-0} B)$"
# exact: the smallest memory anything needs, and one byte less
if [ -n "$least" ] && [ -n "$none" ] && [ $((least - none)) -eq 1 ]; then ok; else bad "conflict-adjacent: at_least $least, nothing_at $none"; fi
check bad-budget 2 "\$.budgets.memory: unknown unit" -- count $QM --budget memory=3parsecs
check bad-constraint 2 "\$.constraints\[0\]" -- count $Q --constraint "hidden %"
check bad-space 2 "randint" -- count --preset mnist_mlp --space "$top_srcdir/tests/data/bad_randint.json"
check bad-cursor 2 "cursor belongs to another query" -- list $Q --cursor c1.0000000000000000.0-0-0-0
check bad-cursor-garbage 2 "^dnnsat: --cursor: malformed cursor" -- list $Q --cursor garbage
check bad-config-json 2 "^dnnsat: --config: not JSON: " -- explain $Q --config '{bad'
printf '{"model": "mnist_mlp", "budget": {"memory": "1GiB"}}\n' >"$tmp/typo_query.json"
check query-field-did-you-mean 2 '^dnnsat: $: unknown field "budget": did you mean budgets?$' -- count "$tmp/typo_query.json" --space "$SP"
# options add to a query file's budgets, workload and constraints (each replaced the file's whole
# object or list: --budget params dropped its memory budget, --optimizer its dtype, --constraint
# its constraints, and more configurations "fit"): all give the answer of the same query as options
printf '{"model": "resnet50", "device": "t4", "budgets": {"memory": "4GiB"}, "workload": {"dtype": "mixed_fp16"}, "constraints": ["batch_size <= 64"]}\n' >"$tmp/q_add.json"
"$DNNSAT" count --preset resnet50 --device t4 --space "$top_srcdir/examples/spaces/resnet.json" --budget memory=4GiB \
	--dtype mixed_fp16 --constraint 'batch_size <= 64' >"$tmp/out" 2>&1
want=$(head -1 "$tmp/out" | cut -d, -f1)
for opt in "--budget params=1G" "--optimizer adam" "--constraint width<=256"; do
	# shellcheck disable=SC2086
	"$DNNSAT" count "$tmp/q_add.json" --space "$top_srcdir/examples/spaces/resnet.json" $opt >"$tmp/out" 2>&1
	[ $? -eq 0 ] && [ -n "$want" ] && [ "$(head -1 "$tmp/out" | cut -d, -f1)" = "$want" ] && ok || bad "query-file-options-add $opt (want $want)"
done
check budget-range 2 '^dnnsat: $.budgets.params: 1e+30 is not a sensible count (a limit is from 0 to 9e18)$' -- count $QP --budget params=1e30
check budget-did-you-mean 2 '^dnnsat: $.budgets: unknown budget "memroy": did you mean memory?$' -- count $Q --budget memroy=3GiB
check bad-memory-0-percent 2 "more than 0 and at most 100" -- count $QM --budget memory=0%
# budgets a user can trust: units, the device's usable memory, ambiguous devices
check budgets-echo 0 "^budgets: memory <= 3 GiB, params <= 5M$" -- count $Q
check budget-bare 2 '\$.budgets.memory: 16 has no unit: did you mean "16GiB"' -- count $QM --budget memory=16
check budget-fraction 2 'did you mean "90%" of the device' -- count $QM --budget memory=0.9
check budget-bare-latency 2 '\$.budgets.latency: 5 has no unit: did you mean "5ms" or "5s"' -- count $Q --budget latency=5
check budget-bits 2 "\$.budgets.memory: unit \"b\" in \"3b\" is ambiguous" -- count $QM --budget memory=3b
check budget-lowercase 0 "^budgets: memory <= 2.794 GiB" -- count $QM --budget memory=3gb
check budget-capped 0 "warning: memory budget 200 GiB is more than t4's usable 14.6 GiB: using 14.6 GiB" -- count $QM --budget memory=200GiB
# estimate's table says so too (only its --json did)
check budget-capped-estimate 0 "^dnnsat: warning: memory budget 200 GiB is more than t4's usable 14.6 GiB: using 14.6 GiB$" -- estimate --preset resnet18 --device t4 --budget memory=200GiB
check budget-capped-echo 0 "^budgets: memory <= 14.56 GiB (t4's usable memory)" -- count $QM --budget memory=200GiB
check budget-capped-json 0 '"source": "device"' -- count $QM --budget memory=200GiB --json
check device-ambiguous 2 '\$.device: device "a100" is ambiguous: it could be a100-40gb' -- count $Q --device a100
check device-ambiguous-estimate 2 '\--device: device "v100" is ambiguous: it could be v100-16gb' -- estimate --preset resnet50 --device v100
check device-suggest 2 "unknown device \"l40\" (did you mean l4, a40 or l40s" -- count $Q --device l40
# parameters that set nothing in the model, and explicit binding
check unbound-warning 0 "dnnsat: warning: parameters block, layers3 (did you mean layers?), width, resolution set nothing in model bert (they pass through)" -- count --preset bert-base --space "$top_srcdir/examples/spaces/resnet.json"
# --convention as estimate's: the macs budget counts in it (resnet50 at batch 8: 32.713 G
# MACs by torchvision's count, 33.159 G by fvcore's with norms and pooling)
printf '{"batch_size": {"_type": "choice", "_value": [8]}}' > "$tmp/b8.json"
check convention-torchvision 0 "^feasible 1 of 1 " -- count --preset resnet50 --space "$tmp/b8.json" --budget macs=33G --convention torchvision
check convention-fvcore 1 "^feasible 0 of 1 " -- count --preset resnet50 --space "$tmp/b8.json" --budget macs=33G --convention fvcore
check convention-max 1 "^largest batch_size = none fits$" -- max --preset resnet50 --space "$tmp/b8.json" --budget macs=33G --convention fvcore --param batch_size
check convention-bad 2 '^dnnsat: $.workload.macs_convention: must be "torchvision", "nb201" or "fvcore"$' -- list --preset resnet50 --space "$tmp/b8.json" --convention fv
# the optimizer as a parameter of the space (NNI's examples search "optimizer": choice Adam, SGD):
# each configuration costed with its own. gpt2-large at seq 256 in 16 GiB: with Adam no batch
# fits (17.07 GiB at batch 1), with SGD batches 1, 2 and 4 (13.38 GiB at 4): 3 of 8, as the two
# queries with the optimizer in the workload say (0 of 4 and 3 of 4; 0 of 8 before, Adam for all)
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [256]}, "optimizer": {"_type": "choice", "_value": ["Adam", "SGD"]}}' >"$tmp/optsearch.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [256]}}' >"$tmp/optnone.json"
OQ="--preset gpt2-large --budget memory=16GiB"
check space-optimizer-count 0 "^feasible 3 of 8 configurations" -- count $OQ --space "$tmp/optsearch.json"
check space-optimizer-adam-alone 1 "^feasible 0 of 4 configurations" -- count $OQ --space "$tmp/optnone.json" --optimizer adam
check space-optimizer-sgd-alone 0 "^feasible 3 of 4 configurations" -- count $OQ --space "$tmp/optnone.json" --optimizer sgd
check space-optimizer-list 0 '^{"batch_size":4,"seq_len":256,"optimizer":"SGD"}$' -- list $OQ --space "$tmp/optsearch.json"
check space-optimizer-explain-sgd 0 "^ok   memory 13.38 GiB <= 16 GiB$" -- explain $OQ --space "$tmp/optsearch.json" --config '{"batch_size": 4, "seq_len": 256, "optimizer": "SGD"}'
check space-optimizer-explain-adam 1 "^FAIL memory 17.07 GiB > 16 GiB$" -- explain $OQ --space "$tmp/optsearch.json" --config '{"batch_size": 1, "seq_len": 256, "optimizer": "Adam"}'
# gradient accumulation as a parameter of the space (Hugging Face's gradient_accumulation_steps, or
# grad_accum): each configuration with its own micro-batches. gpt2-large mixed fp16 at seq 512 in
# 30 GiB and 400 ms a step: 3 of 4 batches fit with 1, 2 with 4 micro-batches, so 5 of 8 (6 of 8
# before, every configuration with the workload's 1); a randint over 1..4: 3 + 3 + 3 + 2
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [512]}, "gradient_accumulation_steps": {"_type": "choice", "_value": [1, 4]}}' >"$tmp/accsearch.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [512]}, "grad_accum": {"_type": "randint", "_value": [1, 5]}}' >"$tmp/accrand.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [512]}}' >"$tmp/accnone.json"
AQ="--preset gpt2-large --dtype mixed_fp16 --budget memory=30GiB --budget step_time=400ms"
check space-accum-count 0 "^feasible 5 of 8 configurations" -- count $AQ --space "$tmp/accsearch.json"
check space-accum-alone-1 0 "^feasible 3 of 4 configurations" -- count $AQ --space "$tmp/accnone.json" --grad-accum 1
check space-accum-alone-4 0 "^feasible 2 of 4 configurations" -- count $AQ --space "$tmp/accnone.json" --grad-accum 4
check space-accum-randint 0 "^feasible 11 of 16 configurations" -- count $AQ --space "$tmp/accrand.json"
check space-accum-explain 1 "^FAIL step_time 816.6 ms > 400 ms$" -- explain $AQ --space "$tmp/accsearch.json" --config '{"batch_size": 8, "seq_len": 512, "gradient_accumulation_steps": 4}'
# both searched: 0 + 3 + 0 + 3 of the four (optimizer, accumulation) queries' 4 batches each
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [256]}, "optimizer": {"_type": "choice", "_value": ["Adam", "SGD"]}, "gradient_accumulation_steps": {"_type": "choice", "_value": [1, 4]}}' >"$tmp/optacc.json"
# NNI's nested form of the optimizer ({"_name": "sgd", "lr": ..., "momentum": ...}: each option with
# its own parameters) is costed per configuration by the options' names (it was warned "its value 0
# is not the name of optimizers", every configuration costed with the workload's Adam), and
# torch.optim.SGD keeps its momentum buffer where the space searches a momentum that can be other
# than 0 (it was costed as plain SGD). ResNet-50, T4, batch 64/128: at 13.35 GiB 3 of 4 (Adam 13.42
# GiB at 128 does not fit, SGD with momentum 13.31 does; before 2), at 13.25 GiB 2 of 4 (plain SGD,
# 13.20, would fit); the flat form too, and the workload's SGD with a momentum of 0.9 (0: no buffer)
printf '{"batch_size": {"_type": "choice", "_value": [64, 128]}, "optimizer": {"_type": "choice", "_value": [{"_name": "adam", "lr": {"_type": "loguniform", "_value": [0.0001, 0.01]}}, {"_name": "sgd", "lr": {"_type": "loguniform", "_value": [0.001, 0.1]}, "momentum": {"_type": "uniform", "_value": [0.8, 0.99]}}]}}' >"$tmp/optnest.json"
printf '{"batch_size": {"_type": "choice", "_value": [64, 128]}, "optimizer": {"_type": "choice", "_value": ["adam", "sgd"]}, "momentum": {"_type": "uniform", "_value": [0.8, 0.99]}}' >"$tmp/optflat.json"
printf '{"batch_size": {"_type": "choice", "_value": [64, 128]}, "momentum": {"_type": "choice", "_value": [0.9]}}' >"$tmp/mom9.json"
printf '{"batch_size": {"_type": "choice", "_value": [64, 128]}, "momentum": {"_type": "choice", "_value": [0]}}' >"$tmp/mom0.json"
R50="--preset resnet50 --device t4"
check space-optimizer-nested 0 "^feasible 3 of 4 configurations" -- count $R50 --budget memory=13.35GiB --space "$tmp/optnest.json"
if grep -q "warning" "$tmp/out"; then bad "space-optimizer-nested: a warning"; else ok; fi
check space-optimizer-nested-momentum 0 "^feasible 2 of 4 configurations" -- count $R50 --budget memory=13.25GiB --space "$tmp/optnest.json"
check space-optimizer-nested-list 0 '^{"batch_size":128,"optimizer":{"_name":"sgd","lr":0.01,"momentum":0.895}}$' -- list $R50 --budget memory=13.35GiB --space "$tmp/optnest.json"
check space-optimizer-nested-explain 0 "^ok   memory 7.56 GiB <= 14 GiB$" -- explain $R50 --budget memory=14GiB --space "$tmp/optnest.json" --config '{"batch_size": 64, "optimizer": {"_name": "sgd", "lr": 0.01, "momentum": 0.9}}'
# a choice of momenta in the SGD option: each configuration its own (batch 128: 13.20 GiB at 0,
# 13.31 at 0.9, as plain SGD and SGD with momentum say): 4 of 6 in 13.25 GiB (before, 3: the
# buffer costed for the 0 too)
printf '{"batch_size": {"_type": "choice", "_value": [64, 128]}, "optimizer": {"_type": "choice", "_value": [{"_name": "adam"}, {"_name": "sgd", "momentum": {"_type": "choice", "_value": [0, 0.9]}}]}}' >"$tmp/optnestm.json"
check space-optimizer-nested-momentum-grid 0 "^feasible 4 of 6 configurations" -- count $R50 --budget memory=13.25GiB --space "$tmp/optnestm.json"
check space-optimizer-nested-momentum-0 0 "^ok   memory 13.20 GiB <= 14 GiB$" -- explain $R50 --budget memory=14GiB --space "$tmp/optnestm.json" --config '{"batch_size": 128, "optimizer": {"_name": "sgd", "momentum": 0}}'
check space-optimizer-nested-momentum-9 0 "^ok   memory 13.31 GiB <= 14 GiB$" -- explain $R50 --budget memory=14GiB --space "$tmp/optnestm.json" --config '{"batch_size": 128, "optimizer": {"_name": "sgd", "momentum": 0.9}}'
check space-optimizer-nested-point 0 "^memory       7.56 GiB training peak" -- estimate $R50 batch_size=64 --optimizer sgd_momentum
check space-momentum-flat 0 "^feasible 2 of 4 configurations" -- count $R50 --budget memory=13.25GiB --space "$tmp/optflat.json"
check space-momentum-workload 0 "^feasible 1 of 2 configurations" -- count $R50 --optimizer sgd --budget memory=13.25GiB --space "$tmp/mom9.json"
check space-momentum-zero 0 "^feasible 2 of 2 configurations" -- count $R50 --optimizer sgd --budget memory=13.25GiB --space "$tmp/mom0.json"
# torch.optim's arguments that keep one more state copy per weight (torch 1.13's state dicts after a
# step: SGD momentum_buffer None at momentum 0, a tensor like the weight otherwise; Adam and AdamW
# max_exp_avg_sq with amsgrad; RMSprop momentum_buffer with momentum, grad_avg with centered), each
# configuration with its own: ResNet-50 at batch 128 on a T4, SGD 13.20 GiB at momentum 0 and 13.31
# at 0.9 in one space; Adam 13.42 / 13.53 with amsgrad; RMSprop 13.31 + 0.11 per buffer (they were
# all costed without the buffer). amsgrad with no Adam to run: warned, costed as before
printf '{"batch_size": {"_type": "choice", "_value": [64, 128]}, "momentum": {"_type": "choice", "_value": [0, 0.9]}}' >"$tmp/mom09.json"
check space-momentum-grid 0 "^feasible 3 of 4 configurations" -- count $R50 --optimizer sgd --budget memory=13.25GiB --space "$tmp/mom09.json"
check space-momentum-grid-0 0 "^ok   memory 13.20 GiB <= 14 GiB$" -- explain $R50 --optimizer sgd --budget memory=14GiB --space "$tmp/mom09.json" --config '{"batch_size": 128, "momentum": 0}'
check space-momentum-grid-9 0 "^ok   memory 13.31 GiB <= 14 GiB$" -- explain $R50 --optimizer sgd --budget memory=14GiB --space "$tmp/mom09.json" --config '{"batch_size": 128, "momentum": 0.9}'
printf '{"batch_size": {"_type": "choice", "_value": [64, 128]}, "amsgrad": {"_type": "choice", "_value": [true, false]}}' >"$tmp/ams.json"
check space-amsgrad 0 "^feasible 3 of 4 configurations" -- count $R50 --budget memory=13.5GiB --space "$tmp/ams.json"
check space-amsgrad-on 0 "^ok   memory 13.53 GiB <= 14 GiB$" -- explain $R50 --budget memory=14GiB --space "$tmp/ams.json" --config '{"batch_size": 128, "amsgrad": true}'
check space-amsgrad-off 0 "^ok   memory 13.42 GiB <= 14 GiB$" -- explain $R50 --budget memory=14GiB --space "$tmp/ams.json" --config '{"batch_size": 128, "amsgrad": false}'
check space-amsgrad-sgd 0 "^dnnsat: warning: parameter amsgrad is not costed per configuration, so every configuration is costed as \$.workload sets it: amsgrad is torch.optim.Adam.s and AdamW.s, and the workload runs none" -- count $R50 --optimizer sgd --budget memory=13.5GiB --space "$tmp/ams.json"
if grep -q "sets nothing" "$tmp/out"; then bad "space-amsgrad-sgd: warned twice"; else ok; fi
printf '{"batch_size": {"_type": "choice", "_value": [128]}, "momentum": {"_type": "choice", "_value": [0, 0.9]}, "centered": {"_type": "choice", "_value": [false, true]}}' >"$tmp/rms.json"
check space-rmsprop-plain 0 "^ok   memory 13.31 GiB <= 14 GiB$" -- explain $R50 --optimizer rmsprop --budget memory=14GiB --space "$tmp/rms.json" --config '{"batch_size": 128, "momentum": 0, "centered": false}'
check space-rmsprop-both 0 "^ok   memory 13.53 GiB <= 14 GiB$" -- explain $R50 --optimizer rmsprop --budget memory=14GiB --space "$tmp/rms.json" --config '{"batch_size": 128, "momentum": 0.9, "centered": true}'
check space-rmsprop-centered 0 "^ok   memory 13.42 GiB <= 14 GiB$" -- explain $R50 --optimizer rmsprop --budget memory=14GiB --space "$tmp/rms.json" --config '{"batch_size": 128, "momentum": 0, "centered": true}'

check space-optimizer-and-accum 0 "^feasible 6 of 16 configurations" -- count $OQ --space "$tmp/optacc.json"
check space-optimizer-and-accum-list 0 '^{"batch_size":4,"seq_len":256,"optimizer":"SGD","gradient_accumulation_steps":4}$' -- list $OQ --space "$tmp/optacc.json"
check space-accum-explain-memory 1 "^FAIL memory 32.64 GiB > 30 GiB$" -- explain $AQ --space "$tmp/accsearch.json" --config '{"batch_size": 8, "seq_len": 512, "gradient_accumulation_steps": 4}'
# b5 EXTRA FILE: a space of batch 1, 2, 4, 8, 16 and EXTRA (more parameters, JSON text) into FILE
b5() { printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8, 16]}%s}' "$1" >"$2"; }
# gradient checkpointing as a parameter of the space (Hugging Face's gradient_checkpointing, or
# checkpointing; true/false or 1/0): each configuration with its own. gpt2-large mixed fp16 at seq
# 512 in 24 GiB: batches 1 to 4 fit without it (31.51 GiB at 8), all five with it (18.55 GiB at
# 8, 282 ms a step instead of 220), so 8 of 10, as the two queries with it in the workload say
# (3 of 5 and 5 of 5; 6 of 10 before, every configuration costed without it); a value that is not
# a boolean leaves it a setting of the workload, with the warning; a model without blocks warns
b5 ', "seq_len": {"_type": "choice", "_value": [512]}, "gradient_checkpointing": {"_type": "choice", "_value": [true, false]}' "$tmp/cksearch.json"
b5 ', "seq_len": {"_type": "choice", "_value": [512]}, "checkpointing": {"_type": "choice", "_value": [0, 1]}' "$tmp/ckints.json"
b5 ', "seq_len": {"_type": "choice", "_value": [512]}' "$tmp/cknone.json"
b5 ', "seq_len": {"_type": "choice", "_value": [512]}, "gradient_checkpointing": {"_type": "choice", "_value": [true, "yes"]}' "$tmp/ckbad.json"
CQ="--preset gpt2-large --dtype mixed_fp16 --budget memory=24GiB"
check space-ckpt-count 0 "^feasible 8 of 10 configurations" -- count $CQ --space "$tmp/cksearch.json"
check space-ckpt-ints 0 "^feasible 8 of 10 configurations" -- count $CQ --space "$tmp/ckints.json"
check space-ckpt-z3 0 "^         agrees with the engine's count$" -- count $CQ --space "$tmp/cksearch.json" --engine z3
check space-ckpt-without 0 "^feasible 3 of 5 configurations" -- count $CQ --space "$tmp/cknone.json"
check space-ckpt-with 0 "^feasible 5 of 5 configurations" -- count $CQ --space "$tmp/cknone.json" --checkpointing
check space-ckpt-list 0 '^{"batch_size":4,"seq_len":512,"gradient_checkpointing":false}$' -- list $CQ --space "$tmp/cksearch.json"
check space-ckpt-explain-on 0 "^ok   step_time 282.2 ms <= 1 s$" -- explain $CQ --budget step_time=1s --space "$tmp/cksearch.json" --config '{"batch_size": 8, "seq_len": 512, "gradient_checkpointing": true}'
check space-ckpt-explain-off 1 "^FAIL memory 31.51 GiB > 24 GiB$" -- explain $CQ --space "$tmp/cksearch.json" --config '{"batch_size": 8, "seq_len": 512, "gradient_checkpointing": false}'
check space-ckpt-not-boolean 0 "^dnnsat: warning: parameter gradient_checkpointing is not costed per configuration, so every configuration is costed as \\\$.workload sets it: its values must be a choice of true and false (or 1 and 0)$" -- count $CQ --space "$tmp/ckbad.json"
printf '{"batch_size": {"_type": "choice", "_value": [8, 64]}, "checkpointing": {"_type": "choice", "_value": [false, true]}}' >"$tmp/ckcnn.json"
check space-ckpt-no-blocks 0 "^dnnsat: warning: checkpointing has no block to apply to in this model" -- count --model "$top_srcdir/examples/models/cnn5.json" --budget memory=8GiB --space "$tmp/ckcnn.json"
# the QLoRA example searches it in Hugging Face's names: 54 of its 120 with it, 18 without
check space-ckpt-example 0 "^feasible 72 of 240 configurations" -- count "$top_srcdir/examples/api/hf-qlora-query.json"
b5 '' "$tmp/b5.json"
# LoRA searched in peft's names (LoraConfig's r, lora_alpha, lora_dropout) over a LoRA workload:
# the rank and the dropout per configuration, lora_alpha a knob that costs nothing. gpt2 on a T4,
# mixed fp16, every linear, 12 GiB: batches that fit at rank 8/64/256 are 4/3/3 without dropout,
# 3/3/3 with (p 0.05 or 0.1 alike), so 2 x (10 + 9 + 9) = 56 of 90, as the six queries with
# --lora-rank and --lora-dropout say (72 before: the rank held at 8 and the dropout off, unsaid);
# Z3's models are assignments of the model's hyperparameters, each lora_alpha's 2 configurations
# (it said the counts disagreed before). A uniform dropout draws 0 with probability 0: every
# configuration has it (9 of 15); a quniform grid holds 0 (10 of 15). The templates' lora_r
# without LoRA in the workload changes nothing: a warning
b5 ', "lora_r": {"_type": "choice", "_value": [8, 64, 256]}, "lora_alpha": {"_type": "choice", "_value": [16, 32]}, "lora_dropout": {"_type": "choice", "_value": [0.0, 0.05, 0.1]}' "$tmp/peft.json"
b5 ', "r": {"_type": "choice", "_value": [8, 64, 256]}, "lora_dropout": {"_type": "uniform", "_value": [0.0, 0.1]}' "$tmp/peftu.json"
b5 ', "lora_dropout": {"_type": "quniform", "_value": [0.0, 0.1, 0.05]}' "$tmp/peftq.json"
LQ="--preset gpt2 --device t4 --dtype mixed_fp16 --lora-rank 8 --lora-targets linear --budget memory=12GiB"
check space-lora-count 0 "^feasible 56 of 90 configurations" -- count $LQ --space "$tmp/peft.json"
check space-lora-r8 0 "^feasible 4 of 5 configurations" -- count $LQ --space "$tmp/b5.json"
check space-lora-r8-dropout 0 "^feasible 3 of 5 configurations" -- count $LQ --space "$tmp/b5.json" --lora-dropout 0.05
check space-lora-r64 0 "^feasible 3 of 5 configurations" -- count --preset gpt2 --device t4 --dtype mixed_fp16 --lora-rank 64 --lora-targets linear --budget memory=12GiB --space "$tmp/b5.json"
check space-lora-z3 0 "^         agrees with the engine's count$" -- count $LQ --space "$tmp/peft.json" --engine z3
check space-lora-z3-models 0 "^z3       28 models (the hyperparameters and nested options) .*, each 2 configurations .*: 56$" -- count $LQ --space "$tmp/peft.json" --engine z3
check space-lora-explain 1 "^FAIL memory 12.60 GiB > 12 GiB$" -- explain $LQ --space "$tmp/peft.json" --config '{"batch_size": 8, "lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.05}'
check space-lora-explain-off 0 "^ok   memory 11.97 GiB <= 12 GiB$" -- explain $LQ --space "$tmp/peft.json" --config '{"batch_size": 8, "lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.0}'
# peft's use_rslora scales by alpha / sqrt(r): a knob that costs nothing, passed through unwarned
b5 ', "use_rslora": {"_type": "choice", "_value": [true, false]}' "$tmp/rslora.json"
check space-lora-rslora 0 "^feasible 8 of 10 configurations" -- count $LQ --space "$tmp/rslora.json"
if grep -q "warning" "$tmp/out"; then bad "space-lora-rslora: a warning"; else ok; fi
check space-lora-uniform 0 "^feasible 9 of 15 configurations" -- count $LQ --space "$tmp/peftu.json"
check space-lora-quniform 0 "^feasible 10 of 15 configurations" -- count $LQ --space "$tmp/peftq.json"
check space-lora-none 0 "^dnnsat: warning: parameter lora_r is LoRA's, and the workload has no LoRA" -- count --preset gpt2 --device t4 --dtype mixed_fp16 --budget memory=12GiB --space "$tmp/peft.json"
# a model's own hyperparameter named r (here the MLP's width) stays the model's, not LoRA's rank:
# at r 64 the rank stays 8 (1,898,539,008 B; rank 64 would be 1,899,688,448 B, and the count 0)
sed 's/"hidden"/"r"/g' "$top_srcdir/schemas/templates/mlp.json" >"$tmp/rmlp.json"
printf '{"batch_size": {"_type": "choice", "_value": [64]}, "r": {"_type": "choice", "_value": [64]}}' >"$tmp/rspace.json"
check space-lora-model-r 0 "^feasible 1 of 1 configurations" -- count --model "$tmp/rmlp.json" --lora-rank 8 --lora-targets linear --space "$tmp/rspace.json" --budget memory=1899000000B
# LoRA's target modules searched (peft's target_modules, each set a comma-separated string, as
# Optuna's suggest_categorical takes them): each configuration's linears get adapters where its
# set picks them. TinyLlama mixed bf16, r 16, 25 GiB, batch 1-8 x seq 1024/2048: 5 + 5 + 7 + 5 = 22
# of 32, as the four queries with --lora-targets say (before: every configuration with the
# workload's q_proj, and the parameter passed through); a set that picks no linear of the model
# makes its configurations invalid, the rule named
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [1024, 2048]}, "target_modules": {"_type": "choice", "_value": ["q_proj,v_proj", "all-linear", "gate_proj", "c_attn"]}}' >"$tmp/tgt.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [1024, 2048]}}' >"$tmp/tgt0.json"
GQ="--preset tinyllama-1.1b --dtype mixed_bf16 --lora-rank 16 --budget memory=25GiB"
check space-lora-targets 0 "^feasible 22 of 32 configurations" -- count $GQ --lora-targets q_proj --space "$tmp/tgt.json"
check space-lora-targets-qv 0 "^feasible 5 of 8 configurations" -- count $GQ --lora-targets q_proj,v_proj --space "$tmp/tgt0.json"
check space-lora-targets-all 0 "^feasible 5 of 8 configurations" -- count $GQ --lora-targets all-linear --space "$tmp/tgt0.json"
check space-lora-targets-gate 0 "^feasible 7 of 8 configurations" -- count $GQ --lora-targets gate_proj --space "$tmp/tgt0.json"
check space-lora-targets-list 0 '^{"batch_size":8,"seq_len":1024,"target_modules":"gate_proj"}$' -- list $GQ --lora-targets q_proj --space "$tmp/tgt.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 8]}, "target_modules": {"_type": "choice", "_value": ["c_attn", "down_proj"]}}' >"$tmp/tgtgpt.json"
check space-lora-targets-none 1 '^     \$.space: LoRA targets "down_proj" match a linear, convolution or embedding layer$' -- explain --preset gpt2 --lora-rank 8 --lora-targets c_attn --space "$tmp/tgtgpt.json" --config '{"batch_size": 1, "target_modules": "down_proj"}'
# the attention kernel as a parameter of the space (Hugging Face's attn_implementation, or
# attention): each configuration with its own kernel. gpt2-large mixed fp16, seq 512, V100 32GB,
# 30 GiB: eager and sdpa (the memory-efficient kernel before Ampere) fit batches 1 to 4 each, flash
# none (it needs compute capability 8.0: the rule named), so 6 of 15 as the three queries say
# (3, 3 and 0 of 5; before, all 15 costed with sdpa, 9); on an A100 in 32 GiB 3 + 4 + 4 = 11;
# a kernel the workload's PyTorch has not is an error at its value; a model without attention warns
b5 ', "seq_len": {"_type": "choice", "_value": [512]}, "attn_implementation": {"_type": "choice", "_value": ["eager", "sdpa", "flash_attention_2"]}' "$tmp/attsearch.json"
TQ="--preset gpt2-large --dtype mixed_fp16 --budget memory=30GiB --device v100-32gb"
check space-attn-count 0 "^feasible 6 of 15 configurations" -- count $TQ --space "$tmp/attsearch.json"
check space-attn-eager 0 "^feasible 3 of 5 configurations" -- count $TQ --space "$tmp/cknone.json" --attention eager
check space-attn-sdpa 0 "^feasible 3 of 5 configurations" -- count $TQ --space "$tmp/cknone.json" --attention sdpa
check space-attn-a100 0 "^feasible 11 of 15 configurations" -- count --preset gpt2-large --dtype mixed_fp16 --budget memory=32GiB --space "$tmp/attsearch.json"
check space-attn-z3 0 "^         agrees with the engine's count$" -- count --preset gpt2-large --dtype mixed_fp16 --budget memory=32GiB --space "$tmp/attsearch.json" --engine z3
check space-attn-list 0 '^{"batch_size":4,"seq_len":512,"attn_implementation":"sdpa"}$' -- list $TQ --space "$tmp/attsearch.json"
check space-attn-explain-flash 1 "flash attention needs compute capability >= 8.0 (Ampere or newer)" -- explain $TQ --space "$tmp/attsearch.json" --config '{"batch_size": 1, "seq_len": 512, "attn_implementation": "flash_attention_2"}'
check space-attn-pytorch 2 '^dnnsat: \$.space.attn_implementation._value\[1\]: "sdpa" needs PyTorch 2.0 or later' -- count $TQ --space "$tmp/attsearch.json" --pytorch 1.13
printf '{"batch_size": {"_type": "choice", "_value": [8, 64]}, "attention": {"_type": "choice", "_value": ["eager", "flash"]}}' >"$tmp/attcnn.json"
check space-attn-no-attention 0 "^dnnsat: warning: parameter attention picks the attention kernel, and model resnet has no attention layer: every value costs the same$" -- count --preset resnet50 --budget memory=8GiB --space "$tmp/attcnn.json"
# a space in Hugging Face's names binds without "bind": per_device_train_batch_size -> batch_size,
# max_seq_length -> seq_len (timm's img_size -> vit's image_size); the optimizer searched
printf '{"per_device_train_batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "max_seq_length": {"_type": "choice", "_value": [256]}, "optimizer": {"_type": "choice", "_value": ["adamw_torch", "adamw_bnb_8bit"]}, "learning_rate": {"_type": "loguniform", "_value": [1e-5, 1e-3]}}' >"$tmp/hfspace.json"
check space-hf-names 0 "^feasible 3 of 8 configurations" -- count $OQ --space "$tmp/hfspace.json"
check space-hf-names-list 0 '^{"per_device_train_batch_size":4,"max_seq_length":256,"optimizer":"adamw_bnb_8bit","learning_rate":0.0001}$' -- list $OQ --space "$tmp/hfspace.json"
# Hugging Face's TrainingArguments.optim is the optimizer too (it was a warning); two names of one
# setting are an error, as two names of one hyperparameter are
printf '{"per_device_train_batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "max_seq_length": {"_type": "choice", "_value": [256]}, "optim": {"_type": "choice", "_value": ["adamw_torch", "adamw_bnb_8bit"]}}' >"$tmp/hfoptim.json"
check space-hf-optim 0 "^feasible 3 of 8 configurations" -- count $OQ --space "$tmp/hfoptim.json"
printf '{"optimizer": {"_type": "choice", "_value": ["adam", "sgd"]}, "optim": {"_type": "choice", "_value": ["adamw_torch", "adamw_bnb_8bit"]}}' >"$tmp/hfoptim2.json"
check space-two-names 2 '^dnnsat: \$.space.optim: sets what "optimizer" already sets (two names of one setting): give one$' -- count $OQ --space "$tmp/hfoptim2.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "per_device_train_batch_size": {"_type": "choice", "_value": [4, 8]}}' >"$tmp/hfboth.json"
check space-hf-names-both 2 'sets hyperparameter batch_size, which "batch_size" .* already sets' -- count $OQ --space "$tmp/hfboth.json"
# an optimizer dnnsat does not model among the values, optimizer_impl, or quantization inside a
# nested choice where the training workload quantizes nothing (no LoRA or freeze): named as
# settings of the workload, whose values every configuration is costed with
printf '{"batch_size": {"_type": "choice", "_value": [64, 4096]}, "optimizer": {"_type": "choice", "_value": ["Adam", "Adadelta"]}, "optimizer_impl": {"_type": "choice", "_value": ["foreach", "fused"]}, "arch": {"_type": "choice", "_value": [{"_name": "small", "quantize": {"_type": "choice", "_value": ["nf4", "int8"]}}]}}' >"$tmp/optspace.json"
# (in inference a nested quantize is taken, each configuration with its option's: ResNet-50's only
# linear is its output layer, so those configurations are invalid, the rule named at the space's
# parameter, as the point query refuses --quantize; a nested BitsAndBytesConfig flag is not taken)
check space-nested-quantize-inference 1 "^     \$.space.quantize: the model has a linear layer to quantize" -- explain --preset resnet50 --device t4 --budget memory=8GiB --space "$tmp/optspace.json" --inference --config '{"batch_size": 64, "optimizer": "Adam", "optimizer_impl": "foreach", "arch": {"_name": "small", "quantize": "nf4"}}'
printf '{"batch_size": {"_type": "choice", "_value": [64, 4096]}, "arch": {"_type": "choice", "_value": [{"_name": "small", "load_in_8bit": {"_type": "choice", "_value": [true, false]}}]}}' >"$tmp/optspace8.json"
check space-workload-settings-inference 0 "^dnnsat: warning: parameter arch/load_in_8bit is a setting of the workload: every configuration is costed as \\\$.workload sets it, whatever its value here; one query per value compares them$" -- count --preset resnet50 --device t4 --budget memory=8GiB --space "$tmp/optspace8.json" --inference
check space-workload-settings 0 "^dnnsat: warning: parameters optimizer_impl, arch/quantize are settings of the workload: every configuration is costed as \\\$.workload sets them (optimizer adam), whatever their values here; one query per value compares them$" -- count --preset resnet50 --device t4 --budget memory=8GiB --space "$tmp/optspace.json"
# The precision searched per configuration, in Lightning's names (precision), the workload's (dtype),
# Accelerate's (mixed_precision) or as Hugging Face's fp16/bf16 flags: the model is built once per
# precision, each copy under the condition that picks it. gpt2-large, seq 512, 30 GiB of a V100:
# 3 + 3 batches fit in fp32 and autocast fp16, as the point queries say, and bf16 is invalid there
# with its rule (before: every configuration costed in the workload's fp32, 9 of 15, and a warning).
# On an A100 the flags make 3 + 3 + 3 of 20: both true is refused, as TrainingArguments refuses it.
# resnet50 on a T4, 14 GiB: 2 + 3 + 3 of 12 in fp32 / pure fp16 / autocast fp16, and Z3 agrees
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8, 16]}, "seq_len": {"_type": "choice", "_value": [512]}, "precision": {"_type": "choice", "_value": ["32-true", "16-mixed", "bf16-mixed"]}}' >"$tmp/prec.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8, 16]}, "seq_len": {"_type": "choice", "_value": [512]}, "mixed_precision": {"_type": "choice", "_value": ["no", "fp16", "bf16"]}}' >"$tmp/precacc.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8, 16]}, "seq_len": {"_type": "choice", "_value": [512]}, "fp16": {"_type": "choice", "_value": [true, false]}, "bf16": {"_type": "choice", "_value": [true, false]}}' >"$tmp/prechf.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8, 16]}, "seq_len": {"_type": "choice", "_value": [512]}, "precision": {"_type": "choice", "_value": [16, 32]}}' >"$tmp/precint.json"
printf '{"batch_size": {"_type": "choice", "_value": [64, 128, 256, 512]}, "dtype": {"_type": "choice", "_value": ["fp32", "fp16", "mixed_fp16"]}}' >"$tmp/precrn.json"
printf '{"batch_size": {"_type": "choice", "_value": [64, 128, 256, 512]}}' >"$tmp/precrn0.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8, 16]}, "seq_len": {"_type": "choice", "_value": [512]}}' >"$tmp/prec0.json"
PQ="--preset gpt2-large --device v100-32gb --budget memory=30GiB"
check space-prec-lightning 0 "^feasible 6 of 15 configurations" -- count $PQ --space "$tmp/prec.json"
# Z3 enumerates the same 6 over the three copies of gpt2-large (it stopped at its resource limit
# at the first check before z3c_at_most collapsed large lists: 0 configurations, "stopped")
check space-prec-z3 0 "^z3       6 configurations by enumeration with blocking clauses, complete$" -- count $PQ --space "$tmp/prec.json" --engine z3 --timeout 600
check_again space-prec-z3-agrees "^         agrees with the engine's count$"
check space-prec-fp32 0 "^feasible 3 of 5 configurations" -- count $PQ --space "$tmp/prec0.json" --dtype fp32
check space-prec-mixed 0 "^feasible 3 of 5 configurations" -- count $PQ --space "$tmp/prec0.json" --dtype mixed_fp16
check space-prec-accelerate 0 "^feasible 6 of 15 configurations" -- count $PQ --space "$tmp/precacc.json"
check space-prec-ints 0 "^feasible 6 of 10 configurations" -- count $PQ --space "$tmp/precint.json"
check space-prec-bf16-v100 1 "^     \\$.space.precision: bf16 needs a GPU with bf16 arithmetic (compute capability >= 8.0)$" -- explain $PQ --space "$tmp/prec.json" --config '{"batch_size": 1, "seq_len": 512, "precision": "bf16-mixed"}'
check space-prec-explain 1 "^FAIL memory 31.07 GiB > 30 GiB$" -- explain $PQ --space "$tmp/prec.json" --config '{"batch_size": 8, "seq_len": 512, "precision": "16-mixed"}'
check space-prec-explain-point 1 "^FAIL memory 31.07 GiB > 30 GiB$" -- explain $PQ --dtype mixed_fp16 --space "$tmp/prec0.json" --config '{"batch_size": 8, "seq_len": 512}'
check space-prec-list 0 '^{"batch_size":4,"seq_len":512,"precision":"16-mixed"}$' -- list $PQ --space "$tmp/prec.json"
check space-prec-hf 0 "^feasible 9 of 20 configurations" -- count --preset gpt2-large --device a100-40gb --budget memory=30GiB --space "$tmp/prechf.json"
check space-prec-hf-both 1 "^     \\$.space: fp16 and bf16 are not both true (transformers' TrainingArguments: at most one of fp16 and bf16 can be True)$" -- explain --preset gpt2-large --device a100-40gb --budget memory=30GiB --space "$tmp/prechf.json" --config '{"batch_size": 1, "seq_len": 512, "fp16": true, "bf16": true}'
check space-prec-hf-z3 0 "^         agrees with the engine's count$" -- count --preset gpt2 --device a100-40gb --budget memory=10GiB --space "$tmp/prechf.json" --engine z3
check space-prec-dtype 0 "^feasible 8 of 12 configurations" -- count --preset resnet50 --device t4 --budget memory=14GiB --space "$tmp/precrn.json"
check space-prec-dtype-fp16 0 "^feasible 3 of 4 configurations" -- count --preset resnet50 --device t4 --budget memory=14GiB --dtype fp16 --space "$tmp/precrn0.json"
check space-prec-dtype-z3 0 "^         agrees with the engine's count$" -- count --preset resnet50 --device t4 --budget memory=14GiB --space "$tmp/precrn.json" --engine z3
# same_as_point LABEL SPACE CONFIG POINT_SPACE POINT_CONFIG POINT_ARGS ARGS...: explains CONFIG of
# SPACE, where the space searches a setting, and POINT_CONFIG of POINT_SPACE with the setting given
# as POINT_ARGS, both with ARGS; adds LABEL to $samebad unless the two say the same (a rule named at
# the space's parameter read as the workload's field) and name the memory
same_as_point() {
	sap_label=$1 sap_space=$2 sap_cfg=$3 sap_space0=$4 sap_cfg0=$5 sap_extra=$6
	shift 6
	"$DNNSAT" explain "$@" --space "$sap_space" --config "$sap_cfg" 2>&1 | sed 's/\$\.space\.dtype/$.workload.dtype/;
	    s/\$\.space\.precision/$.workload.dtype/; s/\$\.space\.quantize/$.workload.quantize/' >"$tmp/pa"
	"$DNNSAT" explain "$@" $sap_extra --space "$sap_space0" --config "$sap_cfg0" >"$tmp/pb" 2>&1
	if ! grep -q "^ok   memory\|^FAIL memory" "$tmp/pa" || ! cmp -s "$tmp/pa" "$tmp/pb"; then
		samebad="$samebad $sap_label"
	fi
}
# each configuration's memory (expected and safe), times, parameters, FLOPs, weight bytes,
# utilization and validity as the point query with that dtype says, to the printed digit (the bf16
# rule named at the space's parameter there)
samebad=""
for spec in "resnet50 batch_size=32" "bert-base batch_size=8 seq_len=128" "tinyllama-1.1b batch_size=2 seq_len=256" "medium batch_size=16 seq_len=35"; do
	set -- $spec
	preset=$1
	shift
	cfg="" sp=""
	for kv in "$@"; do
		cfg="$cfg\"${kv%%=*}\": ${kv#*=}, "
		sp="$sp\"${kv%%=*}\": {\"_type\": \"choice\", \"_value\": [${kv#*=}]}, "
	done
	printf '{%s"dtype": {"_type": "choice", "_value": ["fp32", "fp16", "bf16", "mixed_fp16", "mixed_bf16"]}}' "$sp" >"$tmp/psame.json"
	printf '{%s}' "${sp%, }" >"$tmp/psame0.json"
	for dev in a100-80gb v100-32gb; do
		for mode in "" --inference; do
			# training: the expected peak and the step time; inference: the safe estimate
			B="--budget latency=1000s --budget params=1e12 --budget flops=1e18 --budget weight_bytes=100GiB"
			B="$B --budget min_utilization=0.01"
			[ -z "$mode" ] && B="$B --budget step_time=1000s --budget memory=30GiB"
			[ -n "$mode" ] && B="$B --budget memory=30GiB:safe"
			for dt in fp32 fp16 bf16 mixed_fp16 mixed_bf16; do
				same_as_point "$preset/$dev/${mode:-training}/$dt" "$tmp/psame.json" "{$cfg\"dtype\": \"$dt\"}" \
				    "$tmp/psame0.json" "{${cfg%, }}" "--dtype $dt" --preset "$preset" --device "$dev" $mode $B
			done
		done
	done
done
if [ -z "$samebad" ]; then ok; else bad "space-prec-same: differ from the point query:$samebad"; fi
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "precision": {"_type": "choice", "_value": ["32", "fp16"]}}' >"$tmp/precbad.json"
check space-prec-ambiguous 0 '^dnnsat: warning: parameter precision is not costed per configuration, so every configuration is costed as \$.workload sets it: "fp16" is not Lightning.s: give "16-mixed" (autocast over fp32 weights) or "16-true" (the model in half precision)$' -- count --preset gpt2 --space "$tmp/precbad.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "precision": {"_type": "choice", "_value": ["32", "64"]}}' >"$tmp/prec64.json"
check space-prec-fp64 0 'it: "64" is not modelled (fp64 and fp8 are not)$' -- count --preset gpt2 --space "$tmp/prec64.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "precision": {"_type": "choice", "_value": ["32", "16-mixed"]}, "fp16": {"_type": "choice", "_value": [true, false]}}' >"$tmp/prec2.json"
check space-prec-two-names 2 '^dnnsat: \$.space.fp16: sets what "precision" already sets (two names of one setting): give one$' -- count --preset gpt2 --space "$tmp/prec2.json"
# The base weights' quantization searched per configuration: by name (quantize: none, nf4, nf4-dq,
# fp4, fp4-dq, int8) or by Hugging Face's BitsAndBytesConfig fields (load_in_4bit, load_in_8bit,
# bnb_4bit_quant_type, bnb_4bit_use_double_quant; the fields not searched as BitsAndBytesConfig
# defaults them, fp4 without double quantization), the model built once per mode. LLaMA-2-7B LoRA
# (r 16, q_proj/v_proj), bf16 autocast, seq 1024, 20 GiB of an L4: 4-bit with or without double
# quantization x checkpointing x batch 1-8 has 10 of 32, as the point queries say (1 without
# checkpointing, 4 with, for fp4 and fp4-dq alike; 0 unquantized); 4-bit/8-bit flags: 2 of 16
# (1 + 1 + 0), both true refused as transformers refuses it. Before: every configuration costed
# unquantized with a warning (0 of 32, 0 of 16)
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [1024]}, "load_in_4bit": {"_type": "choice", "_value": [true, false]}, "bnb_4bit_use_double_quant": {"_type": "choice", "_value": [true, false]}, "gradient_checkpointing": {"_type": "choice", "_value": [true, false]}}' >"$tmp/qhf.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [1024]}, "load_in_4bit": {"_type": "choice", "_value": [true, false]}, "load_in_8bit": {"_type": "choice", "_value": [true, false]}}' >"$tmp/qflags.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [1024]}}' >"$tmp/q0.json"
QQ="--preset llama2-7b --device l4 --dtype mixed_bf16 --lora-rank 16 --lora-targets q_proj,v_proj --budget memory=20GiB"
check space-quant-hf 0 "^feasible 10 of 32 configurations" -- count $QQ --space "$tmp/qhf.json"
check space-quant-fp4 0 "^feasible 1 of 4 configurations" -- count $QQ --quantize fp4 --space "$tmp/q0.json"
check space-quant-fp4-dq-ckpt 0 "^feasible 4 of 4 configurations" -- count $QQ --quantize fp4-dq --checkpointing --space "$tmp/q0.json"
check space-quant-none-ckpt 1 "^feasible 0 of 4 configurations" -- count $QQ --checkpointing --space "$tmp/q0.json"
check space-quant-flags 0 "^feasible 2 of 16 configurations" -- count $QQ --space "$tmp/qflags.json"
check space-quant-list 0 '^{"batch_size":1,"seq_len":1024,"load_in_4bit":false,"load_in_8bit":true}$' -- list $QQ --space "$tmp/qflags.json"
check space-quant-both 1 "^     \\$.space: load_in_4bit and load_in_8bit are not both true (transformers' BitsAndBytesConfig: only one can be used at the same time)$" -- explain $QQ --space "$tmp/qflags.json" --config '{"batch_size": 1, "seq_len": 1024, "load_in_4bit": true, "load_in_8bit": true}'
# by name, on a P100 (compute capability 6.0): LLM.int8() invalid there with bitsandbytes' rule;
# a model whose only linear is the output layer has none to quantize: those configurations invalid
printf '{"batch_size": {"_type": "choice", "_value": [1, 8, 64]}, "seq_len": {"_type": "choice", "_value": [1024]}, "quantize": {"_type": "choice", "_value": ["none", "nf4", "int8"]}}' >"$tmp/qnames.json"
check space-quant-int8-p100 1 '^     \$.space.quantize: int8 (LLM.int8()) needs a GPU of compute capability >= 7.5' -- explain --preset tinyllama-1.1b --device p100-pcie-16gb --inference --space "$tmp/qnames.json" --config '{"batch_size": 1, "seq_len": 1024, "quantize": "int8"}'
check space-quant-z3 0 "^         agrees with the engine's count$" -- count --preset gpt2-medium --device t4 --inference --budget memory=4GiB --space "$tmp/qnames.json" --engine z3
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "quantize": {"_type": "choice", "_value": ["none", "nf4"]}}' >"$tmp/qcnn.json"
check space-quant-no-linear 1 '^     \$.space.quantize: the model has a linear layer to quantize (the output layer stays in full precision)$' -- explain --preset resnet50 --inference --space "$tmp/qcnn.json" --config '{"batch_size": 1, "quantize": "nf4"}'
check space-quant-full-training 0 '^dnnsat: warning: parameter quantize is not costed per configuration, so every configuration is costed as \$.workload sets it: quantized weights take no gradient, and the workload trains every linear (give LoRA or freeze)$' -- count --preset resnet50 --space "$tmp/qcnn.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "quantize": {"_type": "choice", "_value": ["none", "nf4"]}, "load_in_8bit": {"_type": "choice", "_value": [true, false]}}' >"$tmp/qtwo.json"
check space-quant-two-names 2 '^dnnsat: \$.space.load_in_8bit: sets what "quantize" already sets (two names of one setting): give one$' -- count --preset gpt2 --inference --space "$tmp/qtwo.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "bnb_4bit_quant_type": {"_type": "choice", "_value": ["nf4", "fp4"]}, "load_in_8bit": {"_type": "choice", "_value": [true, false]}}' >"$tmp/qtype.json"
check space-quant-type-no4bit 0 'it: it applies to 4-bit weights, which neither the workload nor the space (load_in_4bit) has$' -- count --preset gpt2 --inference --space "$tmp/qtype.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "quantize": {"_type": "choice", "_value": ["none", "int8-training"]}}' >"$tmp/qint8t.json"
check space-quant-int8-training 0 "it: Lightning's int8-training (Linear8bitLt with has_fp16_weights=True: trainable weights re-quantized every step) is not modelled$" -- count --preset gpt2 --inference --space "$tmp/qint8t.json"
# the example of a Colab T4 fine-tune (examples/api/hf-colab-t4-query.json): LLaMA-2-7B LoRA over
# the fp16/bf16 and load_in_4bit/load_in_8bit flags, checkpointing, batch and sequence: 30 of 192,
# autocast fp16 9 (4-bit: 6 with checkpointing + 3 without) + 7 (8-bit), fp32 7 + 7, as the point
# queries say; no bf16 (the T4 has none), nothing unquantized
check space-colab-t4-example 0 "^feasible 30 of 192 configurations" -- count "$top_srcdir/examples/api/hf-colab-t4-query.json"
check space-colab-t4-bf16 1 "^     \\$.space.bf16: bf16 needs a GPU with bf16 arithmetic" -- explain "$top_srcdir/examples/api/hf-colab-t4-query.json" --config '{"per_device_train_batch_size": 1, "max_seq_length": 512, "fp16": false, "bf16": true, "load_in_4bit": true, "load_in_8bit": false, "gradient_checkpointing": true, "learning_rate": 0.0001}'
# Lightning's accumulate_grad_batches is the accumulation too, and the training knobs of Hugging
# Face's TrainingArguments and Lightning's Trainer (max_epochs, lr_scheduler_type, adam_beta2, ...)
# pass through unwarned (each said "sets nothing in model gpt" before)
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "seq_len": {"_type": "choice", "_value": [512]}, "accumulate_grad_batches": {"_type": "choice", "_value": [1, 4]}, "max_epochs": {"_type": "choice", "_value": [3, 5]}, "num_train_epochs": {"_type": "choice", "_value": [3]}, "lr_scheduler_type": {"_type": "choice", "_value": ["linear", "cosine"]}, "adam_beta1": {"_type": "choice", "_value": [0.9]}, "adam_beta2": {"_type": "uniform", "_value": [0.95, 0.999]}, "adam_epsilon": {"_type": "choice", "_value": [1e-8]}, "label_smoothing_factor": {"_type": "choice", "_value": [0.0, 0.1]}, "gradient_clip_val": {"_type": "choice", "_value": [1.0]}}' >"$tmp/lightning.json"
check space-accum-lightning 0 "^feasible 40 of 64 configurations" -- count --preset gpt2-large --dtype mixed_fp16 --budget memory=30GiB --budget step_time=400ms --space "$tmp/lightning.json"
if grep -q "warning" "$tmp/out"; then bad "space-knobs-unwarned: a warning"; else ok; fi
# the copies are bounded by the operator limit, and the error says that the space's values made them
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "dtype": {"_type": "choice", "_value": ["fp32", "fp16", "bf16", "mixed_fp16", "mixed_bf16"]}, "quantize": {"_type": "choice", "_value": ["none", "nf4", "nf4-dq", "fp4", "fp4-dq", "int8"]}, "attn_implementation": {"_type": "choice", "_value": ["eager", "sdpa", "flash_attention_2"]}}' >"$tmp/qcopies.json"
check space-copies-limit 2 'the model builds more than 50000 operators (CM_MAX_OPS): the space.s precision, quantization and LoRA target values build the model once per combination (30 copies here); search fewer of them$' -- count --preset llama2-7b --device a100-80gb --lora-rank 16 --lora-targets all-linear --space "$tmp/qcopies.json"
# each configuration's costs as the point query with that --quantize and --dtype says, to the printed
# digit: TinyLlama (untied) and GPT-2 (tied: the output layer is the embedding's), LoRA training and
# inference, an A100 and a P100 (no int8 there), six modes x fp32 and autocast fp16
samebad=""
for spec in "tinyllama-1.1b q_proj,v_proj" "gpt2 c_attn"; do
	set -- $spec
	printf '{"batch_size": {"_type": "choice", "_value": [2]}, "seq_len": {"_type": "choice", "_value": [256]}, "quantize": {"_type": "choice", "_value": ["none", "nf4", "nf4-dq", "fp4", "fp4-dq", "int8"]}, "precision": {"_type": "choice", "_value": ["32", "16-mixed"]}}' >"$tmp/qsame.json"
	printf '{"batch_size": {"_type": "choice", "_value": [2]}, "seq_len": {"_type": "choice", "_value": [256]}}' >"$tmp/qsame0.json"
	for dev in a100-80gb p100-pcie-16gb; do
		for mode in "" --inference; do
			W="--lora-rank 8 --lora-targets $2 --budget step_time=100s"
			[ -n "$mode" ] && W=""
			for qz in none nf4 nf4-dq fp4 fp4-dq int8; do
				for pr in 32:fp32 16-mixed:mixed_fp16; do
					QA=""
					[ $qz != none ] && QA="--quantize $qz"
					same_as_point "$1/$dev/${mode:-training}/$qz/${pr%%:*}" "$tmp/qsame.json" \
					    "{\"batch_size\": 2, \"seq_len\": 256, \"quantize\": \"$qz\", \"precision\": \"${pr%%:*}\"}" \
					    "$tmp/qsame0.json" '{"batch_size": 2, "seq_len": 256}' "$QA --dtype ${pr#*:}" --preset "$1" \
					    --device "$dev" $mode $W --budget memory=15GiB --budget latency=100s --budget min_utilization=0.01 \
					    --budget weight_bytes=100GiB --budget macs=1e15
				done
			done
		done
	done
done
if [ -z "$samebad" ]; then ok; else bad "space-quant-same: differ from the point query:$samebad"; fi
# each configuration's costs with the LoRA targets its list picks as the point query with those
# --lora-targets says, to the printed digit: the model is built once per list, so a tensor needs a
# gradient after the list's first adapter only (before, which linears got adapters was per
# configuration but which activations autograd keeps was the union of the lists': TinyLlama with
# gate_proj kept layer 0's attention activations, 41.98 GiB where the point query says 41.25 at
# batch 8, seq 2048). Lists x base weights unquantized and nf4, TinyLlama and GPT-2, an A100 and a T4
# lora_same LABEL SPACE CONFIG EXTRA ARGS...: same_as_point at batch 2, seq 256, mixed fp16, LoRA
# rank 8, each budget set (so that every cost is printed)
lora_same() {
	ls_label=$1 ls_space=$2 ls_cfg=$3 ls_extra=$4
	shift 4
	same_as_point "$ls_label" "$ls_space" "$ls_cfg" "$tmp/tsame0.json" '{"batch_size": 2, "seq_len": 256}' \
	    "$ls_extra" "$@" --dtype mixed_fp16 --lora-rank 8 --budget memory=15GiB --budget step_time=100s \
	    --budget latency=100s --budget min_utilization=0.01 --budget weight_bytes=100GiB --budget macs=1e15
}
samebad=""
for spec in "tinyllama-1.1b q_proj,v_proj all-linear gate_proj down_proj o_proj,up_proj" "gpt2 c_attn attention.out linear all-linear"; do
	set -- $spec
	preset=$1
	shift
	lists=""
	for tl in "$@"; do lists="$lists\"$tl\", "; done
	printf '{"batch_size": {"_type": "choice", "_value": [2]}, "seq_len": {"_type": "choice", "_value": [256]}, "target_modules": {"_type": "choice", "_value": [%s]}, "quantize": {"_type": "choice", "_value": ["none", "nf4"]}}' "${lists%, }" >"$tmp/tsame.json"
	printf '{"batch_size": {"_type": "choice", "_value": [2]}, "seq_len": {"_type": "choice", "_value": [256]}}' >"$tmp/tsame0.json"
	for tl in "$@"; do
		for dev in a100-80gb t4; do
			for qz in none nf4; do
				QA=""
				[ $qz != none ] && QA="--quantize $qz"
				lora_same "$preset/$dev/$tl/$qz" "$tmp/tsame.json" \
				    "{\"batch_size\": 2, \"seq_len\": 256, \"target_modules\": \"$tl\", \"quantize\": \"$qz\"}" \
				    "$QA" --preset "$preset" --device "$dev" --lora-targets "$tl"
			done
		done
	done
done
if [ -z "$samebad" ]; then ok; else bad "space-lora-targets-same: differ from the point query:$samebad"; fi
# DoRA (peft's use_dora: op_dora.c) searched beside lora_dropout and the base weights'
# quantization: each configuration's costs as the point query with --use-dora, --lora-dropout and
# --quantize say, to the printed digit (TinyLlama; GPT-2, whose Conv1D linears have biases)
printf '{"batch_size": {"_type": "choice", "_value": [2]}, "seq_len": {"_type": "choice", "_value": [256]}, "use_dora": {"_type": "choice", "_value": [true, false]}, "lora_dropout": {"_type": "choice", "_value": [0, 0.05]}, "quantize": {"_type": "choice", "_value": ["none", "nf4"]}}' >"$tmp/dsame.json"
samebad=""
for spec in "tinyllama-1.1b all-linear" "gpt2 c_attn,c_fc"; do
	set -- $spec
	dp=$1 dt=$2
	for dev in a100-80gb t4; do
		# use_dora, lora_dropout, quantize
		for combo in "true 0 none" "true 0 nf4" "true 0.05 none" "true 0.05 nf4" "false 0 none" "false 0 nf4" \
		    "false 0.05 none" "false 0.05 nf4"; do
			set -- $combo
			QA="--lora-dropout $2"
			[ $1 = true ] && QA="$QA --use-dora"
			[ $3 != none ] && QA="$QA --quantize $3"
			lora_same "$dp/$dev/$1/$2/$3" "$tmp/dsame.json" \
			    "{\"batch_size\": 2, \"seq_len\": 256, \"use_dora\": $1, \"lora_dropout\": $2, \"quantize\": \"$3\"}" \
			    "$QA" --preset "$dp" --device "$dev" --lora-targets "$dt"
		done
	done
done
if [ -z "$samebad" ]; then ok; else bad "space-dora-same: differ from the point query:$samebad"; fi
# settings inside the options of a nested choice (NNI's {"_name": "qlora", "quantize": ...}): each
# configuration with its option's, the workload's where its option sets none, as the point
# queries say. TinyLlama, LoRA r 16 on q, v, seq 2048, a T4, 12 GiB, batch 1/2/4/8 x {LoRA; QLoRA
# nf4 with and without checkpointing; DoRA at r 8 or 32}: 6 of 20, 1 + 1 + 4 + 0 + 0 as the five
# point queries say (before: 5, every option costed as plain LoRA with a warning: DoRA at batch 1
# said to fit where it needs 12.24 GiB, QLoRA with checkpointing said not to fit at batch 2 to 8)
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}, "method": {"_type": "choice", "_value": [{"_name": "lora"}, {"_name": "qlora", "quantize": {"_type": "choice", "_value": ["nf4"]}, "gradient_checkpointing": {"_type": "choice", "_value": [true, false]}}, {"_name": "dora", "use_dora": {"_type": "choice", "_value": [true]}, "lora_r": {"_type": "choice", "_value": [8, 32]}}]}}' >"$tmp/nest.json"
printf '{"batch_size": {"_type": "choice", "_value": [1, 2, 4, 8]}}' >"$tmp/nest0.json"
NQ="--preset tinyllama-1.1b --dtype mixed_fp16 --lora-rank 16 --lora-targets q_proj,v_proj --set seq_len=2048 --device t4 --budget memory=12GiB --budget step_time=100s"
check space-nested-settings 0 "^feasible 6 of 20 configurations" -- count $NQ --space "$tmp/nest.json"
if grep -q "warning" "$tmp/out"; then bad "space-nested-settings: a warning"; else ok; fi
samebad=""
for c in '1|{"_name": "lora"}|' '4|{"_name": "qlora", "quantize": "nf4", "gradient_checkpointing": true}|--quantize nf4 --checkpointing' \
    '2|{"_name": "qlora", "quantize": "nf4", "gradient_checkpointing": false}|--quantize nf4' \
    '1|{"_name": "dora", "use_dora": true, "lora_r": 32}|--use-dora --lora-rank 32' \
    '1|{"_name": "dora", "use_dora": true, "lora_r": 8}|--use-dora --lora-rank 8'; do
	nb=${c%%|*} rest=${c#*|}
	same_as_point "nested/$nb/${rest%%|*}" "$tmp/nest.json" "{\"batch_size\": $nb, \"method\": ${rest%%|*}}" \
	    "$tmp/nest0.json" "{\"batch_size\": $nb}" "${rest#*|}" $NQ
done
if [ -z "$samebad" ]; then ok; else bad "space-nested-same: differ from the point query:$samebad"; fi
# accumulation, the attention kernel, LoRA's targets and dropout and the dtype in options too (gpt2,
# LoRA on c_attn, a T4): batch 8 as the point queries say
printf '{"batch_size": {"_type": "choice", "_value": [2, 8]}, "setup": {"_type": "choice", "_value": [{"_name": "base"}, {"_name": "accum", "gradient_accumulation_steps": {"_type": "choice", "_value": [4]}, "attn_implementation": {"_type": "choice", "_value": ["eager"]}}, {"_name": "wide", "target_modules": {"_type": "choice", "_value": ["all-linear"]}, "lora_dropout": {"_type": "choice", "_value": [0.1]}, "dtype": {"_type": "choice", "_value": ["fp32"]}}]}}' >"$tmp/nest2.json"
printf '{"batch_size": {"_type": "choice", "_value": [2, 8]}}' >"$tmp/nest20.json"
samebad=""
for c in '{"_name": "accum", "gradient_accumulation_steps": 4, "attn_implementation": "eager"}|--grad-accum 4 --attention eager' \
    '{"_name": "wide", "target_modules": "all-linear", "lora_dropout": 0.1, "dtype": "fp32"}|--lora-targets all-linear --lora-dropout 0.1 --dtype fp32' \
    '{"_name": "base"}|'; do
	# (the point query's --lora-targets adds to c_attn: every linear but lm_head either way)
	same_as_point "nested2/${c%%|*}" "$tmp/nest2.json" "{\"batch_size\": 8, \"setup\": ${c%%|*}}" "$tmp/nest20.json" \
	    '{"batch_size": 8}' "${c#*|}" --preset gpt2 --dtype mixed_fp16 --lora-rank 8 --lora-targets c_attn \
	    --set seq_len=1024 --device t4 --budget memory=8GiB --budget step_time=100s
done
if [ -z "$samebad" ]; then ok; else bad "space-nested-same-2: differ from the point query:$samebad"; fi
# not taken nested: a form the setting does not take there (a randint), or DoRA without LoRA
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "m": {"_type": "choice", "_value": [{"_name": "a"}, {"_name": "b", "use_dora": {"_type": "choice", "_value": [true]}, "gradient_accumulation_steps": {"_type": "randint", "_value": [1, 4]}}]}}' >"$tmp/nest3.json"
check space-nested-not-taken 0 "^dnnsat: warning: parameters m/use_dora, m/gradient_accumulation_steps are settings of the workload" -- count --preset gpt2 --budget memory=10GiB --space "$tmp/nest3.json"
# more values than any setting takes (300 attention kernels) are not gathered: the merge runs
# before the space parser's limits, so it is bounded
printf '{"batch_size": {"_type": "choice", "_value": [1, 2]}, "m": {"_type": "choice", "_value": [{"_name": "a"}, {"_name": "b", "attention": {"_type": "choice", "_value": [%s]}}]}}' "$(seq 0 299 | sed 's/.*/"k&"/' | paste -sd, -)" >"$tmp/nest4.json"
check space-nested-many-values 0 "^dnnsat: warning: parameter m/attention is a setting of the workload" -- count --preset gpt2 --budget memory=10GiB --space "$tmp/nest4.json"
# a nested choice that sets nothing itself (NNI's {"_name": ...} options) and whose options set
# the model: each option counted with its own values, whatever their order. resnet18 at batch 64:
# basic blocks 3.78 GiB, bottleneck 6.08; in 6 GiB one of the two options fits. Before cost model
# 1.4.17 the engine decided such a box by one exact evaluation, at the first option: [basic
# default, bottleneck] counted 2 of 2 (bottleneck said to fit, the dangerous side), the reverse
# order 0 of 2
printf '{"batch_size": {"_type": "choice", "_value": [64]}, "arch": {"_type": "choice", "_value": [{"_name": "a"}, {"_name": "b", "block": {"_type": "choice", "_value": ["bottleneck"]}}]}}' >"$tmp/nestab.json"
printf '{"batch_size": {"_type": "choice", "_value": [64]}, "arch": {"_type": "choice", "_value": [{"_name": "b", "block": {"_type": "choice", "_value": ["bottleneck"]}}, {"_name": "a"}]}}' >"$tmp/nestba.json"
printf '{"batch_size": {"_type": "choice", "_value": [64]}, "arch": {"_type": "choice", "_value": [{"_name": "a", "block": {"_type": "choice", "_value": ["basic"]}}, {"_name": "b", "block": {"_type": "choice", "_value": ["bottleneck"]}}]}}' >"$tmp/nestboth.json"
check space-nested-order-ab 0 "^feasible 1 of 2 configurations" -- count --preset resnet18 --budget memory=6GiB --space "$tmp/nestab.json"
check space-nested-order-ba 0 "^feasible 1 of 2 configurations" -- count --preset resnet18 --budget memory=6GiB --space "$tmp/nestba.json"
check space-nested-order-both 0 '^{"batch_size":64,"arch":{"_name":"a","block":"basic"}}$' -- list --preset resnet18 --budget memory=6GiB --space "$tmp/nestboth.json"
if grep -q bottleneck "$tmp/out"; then bad "space-nested-order-both: bottleneck listed"; else ok; fi
# Z3 cross-checks such spaces (each option a variable of its own): it said "no enumeration"
# before, and it disagrees with the engine that had the bug above
check space-nested-order-z3 0 "^z3       1 configurations by enumeration with blocking clauses, complete$" -- count --preset resnet18 --budget memory=6GiB --space "$tmp/nestba.json" --engine z3 --timeout 600
check_again space-nested-order-z3-agrees "^         agrees with the engine's count$"
# the example of LoRA, DoRA, QLoRA and QDoRA as one nested choice (examples/api/hf-peft-methods-query.json):
# 66 of 96, as the four point queries say (15 + 15 + 18 + 18)
check space-peft-methods-example 0 "^feasible 66 of 96 configurations" -- count "$top_srcdir/examples/api/hf-peft-methods-query.json"
# the same space on TinyLlama cut to 8 layers, 8 GiB: Z3 enumerates all 84 models of it and agrees.
# Before, its bound on the peak was one linear inequality per alternative of the peak's maxima
# (35,030 of them) and its 10th check stopped at the resource limit ("9 configurations ... stopped");
# past 16,384 alternatives z3c_at_most now collapses lists into fresh constants (solver/z3/z3c.h)
/usr/bin/python3 -c 'import json, sys; q = json.load(open(sys.argv[1])); q.update(model="tinyllama-1.1b", fixed={"layers": 8}, budgets={"memory": "8GiB"}); print(json.dumps(q))' "$top_srcdir/examples/api/hf-peft-methods-query.json" >"$tmp/tl8methods.json"
check space-peft-methods-tinyllama-z3 0 "^z3       84 configurations by enumeration with blocking clauses, complete$" -- count "$tmp/tl8methods.json" --engine z3 --timeout 600
check_again space-peft-methods-tinyllama-z3-agrees "^         agrees with the engine's count$"
# the same shape on a 2-layer GPT-2 (LoRA, DoRA, QLoRA with its own learning rates as one nested
# choice): Z3 enumerates it (each option a variable of its own) and agrees, 4 of 24 at 1.5 GiB
printf '{"model": {"template": "gpt", "preset": "gpt2"}, "device": "t4", "fixed": {"n_layer": 2, "n_embd": 256, "n_head": 4, "vocab": 1000}, "workload": {"mode": "training", "dtype": "mixed_fp16", "lora": {"rank": 8, "targets": ["c_attn"]}}, "space": {"batch_size": {"_type": "choice", "_value": [8, 32, 128]}, "seq_len": {"_type": "choice", "_value": [128, 512]}, "method": {"_type": "choice", "_value": [{"_name": "lora"}, {"_name": "dora", "use_dora": {"_type": "choice", "_value": [true]}}, {"_name": "qlora", "quantize": {"_type": "choice", "_value": ["nf4"]}, "lr": {"_type": "choice", "_value": [0.001, 0.0001]}}]}}, "budgets": {"memory": "1.5GiB"}}' >"$tmp/gmethods.json"
check space-peft-methods-z3 0 "^feasible 4 of 24 configurations" -- count "$tmp/gmethods.json" --engine z3 --timeout 600
check_again space-peft-methods-z3-agrees "^         agrees with the engine's count$"
# DoRA's costs: TinyLlama, all-linear rank 16, batch 4, seq 1024, mixed bf16, on an A100: a
# magnitude per output row (+394,240 trainable beside LoRA's 12,615,680), each adapted linear's
# result and adapter output kept for the products' backward (bf16 under autocast: +6.02 GiB kept,
# 12.06 GiB before), the step's time with the weight's norm and the products (303 ms, 196 without)
DQ="--preset tinyllama-1.1b --device a100-80gb --dtype mixed_bf16 --lora-rank 16 --lora-targets all-linear --set batch_size=4 --set seq_len=1024"
check dora-params 0 "^parameters   1,100,048,384, 13,009,920 trainable$" -- estimate $DQ --use-dora
check dora-workload-line 0 "DoRA rank 16 on all-linear (dropout 0.05)" -- estimate $DQ --use-dora --lora-dropout 0.05
check dora-kept 0 "^activations  18.08 GiB kept for backward$" -- estimate $DQ --use-dora
check lora-kept 0 "^activations  12.06 GiB kept for backward$" -- estimate $DQ
check dora-needs-lora 2 "^dnnsat: --use-dora: DoRA needs LoRA" -- estimate --preset gpt2 --use-dora
printf '{"model": {"preset": "gpt2"}, "space": {"batch_size": {"_type": "choice", "_value": [2]}}, "workload": {"lora": {"rank": 8, "targets": ["c_attn"], "use_dora": "yes"}}}' >"$tmp/dbad.json"
check dora-json-bad 2 '^dnnsat: \$.workload.lora.use_dora: must be true or false (peft.s use_dora)$' -- count "$tmp/dbad.json"
printf '{"batch_size": {"_type": "choice", "_value": [2]}, "use_dora": {"_type": "choice", "_value": [true, false]}}' >"$tmp/dnolora.json"
check space-dora-no-lora 0 "^dnnsat: warning: parameter use_dora is not costed per configuration, so every configuration is costed as \$.workload sets it: DoRA is a form of LoRA, and the workload has no LoRA" -- count --preset gpt2 --budget memory=10GiB --space "$tmp/dnolora.json"
# a setting's parameter in a form it does not take: the warning says why (it only said "a setting")
check space-workload-settings-why 0 '^dnnsat: warning: parameter optimizer is not costed per configuration, so every configuration is costed as \$.workload sets it: unknown optimizer "Adadelta" (sgd, ' -- count --preset resnet50 --device t4 --budget memory=8GiB --space "$tmp/optspace.json"
printf '{"batch_size": {"_type": "choice", "_value": [8]}, "attention": {"_type": "choice", "_value": ["eager", "flashy"]}}' >"$tmp/attbad.json"
check space-attn-why 0 '^dnnsat: warning: parameter attention is not costed per configuration, so every configuration is costed as \$.workload sets it: "flashy" is not an attention kernel (eager, sdpa, flash_attention_2, math, mem_efficient, flash); did you mean flash?$' -- count --preset gpt2 --space "$tmp/attbad.json"
# a misspelt hyperparameter in the space passes through: the warning names the closest one
# (the answer is at the model's default batch size); --param, --per and dnnsat's own options too
printf '{"batch_sise": {"_type": "choice", "_value": [8, 512]}, "layers3": {"_type": "randint", "_value": [4, 8]}}' > "$tmp/typo.json"
check unbound-did-you-mean 1 "^dnnsat: warning: parameter batch_sise (did you mean batch_size?) sets nothing in model resnet (it passes through)$" -- count --preset resnet50 --device t4 --space "$tmp/typo.json" --budget memory=4GiB
check param-did-you-mean 2 '^dnnsat: --param: the space has no parameter "batch_sise" (did you mean batch_size?)$' -- max $Q --param batch_sise
check per-did-you-mean 2 '^dnnsat: --per: the space has no parameter "dpeth" (did you mean depth?)$' -- max $Q --param batch_size --per dpeth
check constraint-did-you-mean 2 "^dnnsat: \$.constraints\[0\]: expression \"hiden > 3\": unknown name 'hiden' .* (did you mean hidden?)$" -- count $Q --constraint "hiden > 3"
check top-option-did-you-mean 2 '^dnnsat: --verison: unknown option (did you mean --version? see dnnsat --help)$' -- --verison
printf '{"batch_size": {"_type": "choice", "_value": [8, 16]}, "hidden_size": {"_type": "choice", "_value": [384, 768]}}' > "$tmp/hs.json"
check unbound-one 0 "warning: parameter hidden_size sets nothing in model bert" -- count --preset bert-base --space "$tmp/hs.json"
"$DNNSAT" count --preset bert-base --space "$tmp/hs.json" --bind hidden_size=hidden --device h200-141gb >"$tmp/out" 2>&1
if [ $? -eq 0 ] && ! grep -q warning "$tmp/out" && grep -q "feasible 4 of 4" "$tmp/out"; then ok; else bad "bind-hidden"; fi
check bind-unknown-hp 2 '\$.bind.hidden_size: model bert has no hyperparameter "hiden" (did you mean hidden' -- count --preset bert-base --space "$tmp/hs.json" --bind hidden_size=hiden
check bind-unknown-param 2 '\$.bind.hiddensize: the space has no parameter "hiddensize" (did you mean hidden_size' -- count --preset bert-base --space "$tmp/hs.json" --bind hiddensize=hidden
check bind-bad 2 "\--bind: \"hidden_size\" is not PARAMETER=HYPERPARAMETER" -- count --preset bert-base --space "$tmp/hs.json" --bind hidden_size
# what is given once is refused the second time, both named (the last won unsaid);
# --constraint stays repeatable ($Q gives --space, memory and params budgets)
check bind-twice 2 '^dnnsat: --bind: the binding of hidden_size given twice (--bind hidden_size=hidden and --bind hidden_size=intermediate): give one$' -- count --preset bert-base --space "$tmp/hs.json" --bind hidden_size=hidden --bind hidden_size=intermediate
check budget-twice 2 '^dnnsat: --budget: the memory budget given twice (--budget memory=3GiB and --budget memory=20GiB): give one$' -- count $Q --budget memory=20GiB
check space-twice 2 "^dnnsat: --space: the search space given twice (--space $SP and --space $SP): give one\$" -- count $Q --space "$SP"
check model-twice 2 '^dnnsat: --template: give one model (--preset mnist_mlp and --template mlp)$' -- count $Q --template mlp
check model-twice-file 2 '^dnnsat: --model: give one model (--preset mnist_mlp and --model m.json)$' -- max $Q --model m.json --param hidden
check preset-twice 2 '^dnnsat: --preset: give one model (--preset mnist_mlp and --preset resnet50)$' -- prune "$SP" --preset mnist_mlp --preset resnet50
check cursor-and-offset 2 '^dnnsat: --cursor: give --cursor or --offset, not both (--cursor abc and --offset 3)$' -- list $Q --cursor abc --offset 3
check constraints-repeat 0 "^feasible" -- count $Q --constraint "hidden >= 256" --constraint "depth <= 8"
# a deadline: a space (1.3e30 configurations) that no machine counts within it
check deadline 3 "deadline of" -- count --model "$top_srcdir/examples/models/transformer24.json" --space "$top_srcdir/examples/spaces/transformer24.json" --budget memory=16GiB --timeout 0.2
# a query file's "timeout" is the CLI's deadline (a service query file runs as is); --timeout wins
printf '{"model": %s, "space": %s, "budgets": {"memory": "16GiB"}, "timeout": 0.2}' \
    "$(cat "$top_srcdir/examples/models/transformer24.json")" "$(cat "$top_srcdir/examples/spaces/transformer24.json")" >"$tmp/t24q.json"
check query-timeout 3 "(deadline of 0.2 s passed)" -- count "$tmp/t24q.json"
check query-timeout-option-wins 3 "(deadline of 0.3 s passed)" -- count "$tmp/t24q.json" --timeout 0.3
sed 's/"timeout": 0.2/"timeout": "soon"/' "$tmp/t24q.json" >"$tmp/t24bad.json"
check query-timeout-bad 2 '^dnnsat: \$.timeout: must be a number of seconds, more than 0 and at most 86400 (a day)$' -- count "$tmp/t24bad.json"
# the limit said (it was "must be seconds, more than 0" for 1e9)
check timeout-too-long 2 '^dnnsat: --timeout: must be seconds, more than 0 and at most 86400 (a day)$' -- count $Q --timeout 1e9
# a bare byte count is read as bytes in the hint (it offered "2108271104GiB")
check budget-bare-bytes 2 '\$.budgets.memory: 2108271104 has no unit: did you mean "2108271104B" (bytes)?' -- count $QM --budget memory=2108271104
# the 1.3e30-configuration transformer: nothing finishes, yet an estimate and samples come back
T24="--model $top_srcdir/examples/models/transformer24.json --space $top_srcdir/examples/spaces/transformer24.json --device a100-40gb"
check estimate-text 3 "^estimate [0-9.e+]*, 95% interval [0-9.e+]* to [0-9.e+]* ([0-9]* draws)" -- count $T24 --timeout 1
check estimate-json 3 '"estimate": {' -- count $T24 --timeout 1 --json
check sample-unfinished 0 "approximate samples" -- sample $T24 --timeout 4 --n 3 --seed 5
[ "$(grep -c '"batch_size"' "$tmp/out")" -eq 3 ] && ok || bad "sample-unfinished: 3 samples"
# ten million samples cannot be drawn in a second: exit 3 with those drawn
check sample-deadline 3 "deadline of 1 s passed after [0-9]* of 10000000 samples" -- sample $T24 --timeout 1 --n 10000000
check help-sample 0 "sample: fewer than N samples" -- --help

# issue 14: the CLI as git and ripgrep users expect
# every command has a help of its own: COMMAND --help (anywhere), help COMMAND
for c in estimate count list sample reduce explain max min prune templates devices import; do
	check "help-$c" 0 "^usage: dnnsat $c" -- $c --help
	check "help-command-$c" 0 "^usage: dnnsat $c" -- help $c
done
check help-after-options 0 "^usage: dnnsat count" -- count $Q --help
check help-short 0 "^usage: dnnsat estimate" -- estimate --preset resnet50 -h
check help-unknown 2 'unknown command "estimat" (did you mean estimate?' -- help estimat
check help-lists-solver-workload 0 "^  --optimizer O  --dtype T  --convention C  --attention A  --grad-accum N  --checkpointing  --inference" -- --help
check help-count-optimizer 0 "^  --optimizer sgd|" -- count --help
# the macs and flops budgets bound the whole batch: said where the budgets are listed
check help-count-macs-batch 0 "macs and flops count the forward pass of the whole batch, batch_size" -- count --help
check help-macs-batch 0 "macs and flops count the forward pass of the whole batch, batch_size samples, not one" -- --help
# the largest space the engine counts exactly: 2^127 configurations (the message said 1.7e38,
# yet up to 2^128 - 2 were taken)
sp='{"batch_size": {"_type": "choice", "_value": [16, 32]}'
i=0
while [ $i -lt 126 ]; do sp="$sp, \"p$i\": {\"_type\": \"choice\", \"_value\": [0, 1]}"; i=$((i + 1)); done
echo "$sp}" >"$tmp/s127.json"
echo "$sp, \"three\": {\"_type\": \"choice\", \"_value\": [0, 1, 2]}}" >"$tmp/s127x3.json"
check space-2-127 0 "^feasible 170141183460469231731687303715884105728 of 170141183460469231731687303715884105728 " -- count --preset resnet18 --space "$tmp/s127.json" --device t4
check space-above-2-127 2 '^dnnsat: $.space: the space has more than 1.7e38 configurations (2^127, the most the engine counts exactly)' -- count --preset resnet18 --space "$tmp/s127x3.json" --device t4
check help-count-convention 0 "^  --convention torchvision|nb201|fvcore   how MACs count, and so the macs and flops budgets" -- count --help
check version 0 "^dnnsat [0-9][0-9.]* (cost model [0-9.]*)$" -- --version
# --version after a command (as git), wherever it stands (it was an unknown option)
check version-after-command 0 "^dnnsat [0-9][0-9.]* (cost model [0-9.]*)$" -- count --version
check version-after-options 0 "^dnnsat [0-9][0-9.]* (cost model [0-9.]*)$" -- estimate --preset resnet50 --version
# "-": standard input wherever a JSON file is read (it was "-: no such file" or an unknown option),
# read once
"$DNNSAT" count --preset mnist_mlp --space - --device t4 --budget memory=3GiB --budget params=5M <"$SP" >"$tmp/out" 2>&1
[ $? -eq 0 ] && grep -q "^feasible 528 of 1536 " "$tmp/out" && ok || bad "space-stdin"
printf '{"model": "mnist_mlp", "device": "t4", "space": %s}' "$(cat "$SP")" >"$tmp/q_stdin.json"
"$DNNSAT" count - --budget memory=3GiB --budget params=5M <"$tmp/q_stdin.json" >"$tmp/out" 2>&1
[ $? -eq 0 ] && grep -q "^feasible 528 of 1536 " "$tmp/out" && ok || bad "query-stdin"
"$DNNSAT" count - --space - <"$tmp/q_stdin.json" >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "^dnnsat: --space: -: standard input was read already (for query): give one file as -$" "$tmp/out" && ok || bad "stdin-twice"
echo '{"batch_size": 32, "hidden": 256, "depth": 1, "activation": "relu", "learning_rate": 0.001}' | "$DNNSAT" explain $Q --config - >"$tmp/out" 2>&1
[ $? -eq 0 ] && grep -q "^feasible$" "$tmp/out" && ok || bad "config-stdin"
"$top_builddir/dnnsatd" --version >"$tmp/out" 2>&1
[ $? -eq 0 ] && grep -q "^dnnsatd [0-9][0-9.]* (cost model [0-9.]*)$" "$tmp/out" && ok || bad "dnnsatd-version"
"$top_builddir/dnnsatd" --help >"$tmp/out" 2>&1
[ $? -eq 0 ] && grep -q "^  --version " "$tmp/out" && ok || bad "dnnsatd-help-version"
# a mistyped daemon option names the one meant, as the CLI's do
"$top_builddir/dnnsatd" --max-conections 3 >"$tmp/out" 2>&1
[ $? -ne 0 ] && grep -q "did you mean --max-connections?" "$tmp/out" && ok || bad "dnnsatd-did-you-mean"
"$top_builddir/dnnsatd" --listn=127.0.0.1:1 >"$tmp/out" 2>&1
[ $? -ne 0 ] && grep -q "did you mean --listen?" "$tmp/out" && ok || bad "dnnsatd-did-you-mean-eq"
# did you mean: commands, options, devices, presets, templates, hyperparameters
check suggest-command 2 '^dnnsat: unknown command "estimat" (did you mean estimate? see dnnsat --help)$' -- estimat
check suggest-option 2 '^dnnsat: --devic: unknown option (did you mean --device or --device-file? see dnnsat estimate --help)$' -- estimate --preset resnet50 --devic t4
check suggest-option-count 2 '^dnnsat: --devic: unknown option (did you mean --device? see dnnsat count --help)$' -- count $Q --devic t4
check suggest-option-prune 2 '^dnnsat: --summry: unknown option (did you mean --summary?' -- prune "$SP" --summry csv
check unknown-option-last 2 '^dnnsat: --frob: unknown option' -- count $Q --frob
check unknown-option-devices 2 '^dnnsat: --jsn: unknown option (did you mean --json?' -- devices --jsn
check suggest-device 2 'unknown device "RTX 4090" (did you mean rtx-4090' -- estimate --preset resnet50 --device "RTX 4090"
check suggest-preset 2 'no template or preset named "bert_base" (did you mean bert-base?' -- estimate --preset bert_base
check suggest-preset-prefix 2 '"gpt2-small" (did you mean gpt2?' -- estimate --preset gpt2-small
check suggest-preset-solver 2 '^dnnsat: \$.model.preset: .*"bert_base" (did you mean bert-base?' -- count --preset bert_base --space "$SP"
check suggest-template-solver 2 '^dnnsat: \$.model.template: .*"gpt2-small" (did you mean gpt2?' -- count --template gpt2-small --space "$SP"
check suggest-hp 2 'no hyperparameter "batchsize" (did you mean batch_size?)' -- estimate --preset resnet50 batchsize=64
check suggest-hp-solver 2 '^dnnsat: \$.fixed.hiden: .*no hyperparameter "hiden" (did you mean hidden?)' -- count $Q hiden=512
# NAME=VALUE in every command, as --set; a missing file is "no such file"
check set-positional-count 0 "^feasible 372 of 1536 configurations" -- count $Q in_features=2000
# a hyperparameter fixed (NAME=VALUE, --set) that the space searches too: the space's
# values won and the fix was ignored unsaid (exit 0, the same count with or without it)
check set-searched-too 2 '^dnnsat: $.fixed.batch_size: the space sets batch_size too (its parameter "batch_size"), and its values would win: fix it or search it, not both' -- count $Q batch_size=32
check set-searched-too-option 2 '$.fixed.hidden: the space sets hidden too' -- max $Q --set hidden=512 --param batch_size
check set-positional-max 0 "^largest hidden = 512$" -- max $Q --param hidden in_features=2000 --constraint "depth >= 8"
check missing-query 2 "^dnnsat: query: $tmp/nope.json: no such file\$" -- count "$tmp/nope.json"
check missing-model 2 "^dnnsat: --model: $tmp/nope.json: no such file\$" -- estimate --model "$tmp/nope.json"
check missing-device-file 2 "^dnnsat: --device-file: $tmp/nope.json: no such file\$" -- estimate --preset resnet18 --device-file "$tmp/nope.json"
check missing-space 2 "^dnnsat: --space: $tmp/nope.json: no such file\$" -- count --preset mnist_mlp --space "$tmp/nope.json"
# devices: a header, each column starting at one place on every line
"$DNNSAT" devices >"$tmp/out" 2>&1
if head -1 "$tmp/out" | grep -q "^NAME  *GPU  *MEMORY  *USABLE  *BANDWIDTH" &&
    [ "$(awk '{ print index($0, " GiB") }' "$tmp/out" | sed 1d | sort -u | wc -l)" -eq 1 ] &&
    [ "$(awk '{ print index($0, " GB/s") }' "$tmp/out" | sed 1d | sort -u | wc -l)" -eq 1 ] &&
    [ "$(awk '{ print length($0) }' "$tmp/out" | sort -u | wc -l)" -eq 1 ]; then
	ok
else
	bad "devices-aligned"
fi

# the manual pages name every option of every command's help and of dnnsatd --help,
# every command, and render without warnings (where man is installed)
man1=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$top_srcdir/man/dnnsat.1")
man8=$(sed 's/\\-/-/g; s/\\f[BIRP]//g' "$top_srcdir/man/dnnsatd.8")
missing=""
for c in estimate count list sample reduce explain max min prune templates devices import; do
	printf '%s\n' "$man1" | grep -q "^\.B $c\|^\.B dnnsat $c\|^\.BR.* $c\|^\.B $c\\\\fR" || missing="$missing command:$c"
	for o in $("$DNNSAT" $c --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
		printf '%s\n' "$man1" | grep -q -- "$o\\b" || missing="$missing $c:$o"
	done
done
for o in $("$top_builddir/dnnsatd" --help | grep -o -- '^  --[a-z][a-z0-9-]*' | sort -u); do
	printf '%s\n' "$man8" | grep -q -- "$o\\b" || missing="$missing dnnsatd:$o"
done
if [ -z "$missing" ]; then ok; else echo "missing from the manual pages:$missing" >"$tmp/out"; bad "man-complete"; fi
for p in dnnsat.1 dnnsatd.8; do
	if command -v man >/dev/null 2>&1; then
		warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l --warnings=all "$top_srcdir/man/$p" 2>&1 >/dev/null)
		if [ -z "$warn" ]; then ok; else echo "$warn" >"$tmp/out"; bad "man-render-$p"; fi
	fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
