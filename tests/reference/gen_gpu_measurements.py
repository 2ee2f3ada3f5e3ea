#!/usr/bin/env python3
"""Measure on a real GPU what dnnsat's cost model predicts: peak training memory (what PyTorch's
caching allocator allocates and reserves, and what the device has in use beside it), the CUDA
context by stage, cuDNN convolution workspaces, training step times and NAS-Bench-201 latencies.

This is the one script run on a lent GPU (the project's tests never need one); its CSVs are
committed under tests/reference/ (h200_*.csv for the NVIDIA H200 run) and compared with dnnsat
by tests/cli/test_gpu_measured.py. Every figure is PyTorch's own:
  max_allocated / max_reserved   torch.cuda.max_memory_allocated / max_memory_reserved over the
                                 first three training steps (the optimizer's state is created in
                                 step 1; steps 2-3 hold it through forward and backward)
  device_used                    total - free from cudaMemGetInfo (torch.cuda.mem_get_info) after
                                 the steps: what nvidia-smi calls used, for this process alone
  outside_allocator              device_used - memory_reserved at that moment: the CUDA context
                                 with the kernels loaded so far, cuBLAS/cuDNN handles
  step_ms                        median of 5 timed steps after the three (CUDA synchronised
                                 wall time; the GPU's default clocks, nothing else running)

Sections (each bounded by the deadline; a failure is logged and the next one runs):
  context     a child process records device memory after each stage of start-up: CUDA init,
              the first cuBLAS matrix product (fp32, bf16), the first cuDNN convolution forward
              and backward, a ResNet-18 training step, flash attention forward and backward;
              and, last (context_eager), the same with CUDA_MODULE_LOADING=EAGER (every kernel
              loaded at start)
  cnn         torchvision models (and the Xception of gen_torch_reference_choices.py) trained as
              GPUMemNet trains them (tests/reference/gpumemnet_cnn_a100_measured.csv): Adam lr 1e-3,
              cross-entropy, fp32, 224x224 (inception 299x299); plus autocast fp16/bf16 and
              cudnn.benchmark variants
  workspace   every distinct convolution of resnet18/resnet50/vgg16/xception run alone, forward
              and backward: the allocator's peak above the tensors the op returns is its workspace
              (the H200 run of 2026-12-04 collected the signatures under torch.no_grad(), so its
              input_requires_grad is 0 throughout and its backward is the weight gradient's
              alone; fixed since)
  transformer Hugging Face BERT, GPT-2 and LLaMA (random weights from their configs: nothing is
              downloaded) and torchvision ViT: AdamW, labels -> the model's own loss; attention
              eager or SDPA, fp32 or autocast, gradient checkpointing, LoRA through peft
  nb201       forward latency of NAS-Bench-201 cells (C=16, N=5, 32x32, 10 classes, eval, fp32) at
              batch 1/32/256, the cells of shared/reference-data/help_nb201_latency_pascal.csv whose
              index is a multiple of 100 (157 cells)

Run (on the GPU machine, from the repository root):
    PYTHONUNBUFFERED=1 python3 tests/reference/gen_gpu_measurements.py --out DIR --deadline 440
Smoke test of the script itself (CPU, tiny sizes, memory columns empty):
    /usr/bin/python3 tests/reference/gen_gpu_measurements.py --smoke --out /tmp/gpum
"""

import argparse
import csv
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
T0 = time.time()
ARGS = None
DEV = "cuda"


def log(*a):
    print("[%6.1fs]" % (time.time() - T0), *a, flush=True)


SECTION_END = None  # seconds after start at which the running section stops starting work


def left():
    end = ARGS.deadline if SECTION_END is None else min(ARGS.deadline, SECTION_END)
    return end - (time.time() - T0)


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


class Table:
    """A CSV under --out, written row by row (a run cut short keeps what it measured)."""

    def __init__(self, name, cols):
        self.cols = cols
        self.f = open(os.path.join(ARGS.out, name), "w", newline="")
        self.w = csv.DictWriter(self.f, cols, extrasaction="ignore")
        self.w.writeheader()

    def add(self, row):
        self.w.writerow({k: row.get(k, "") for k in self.cols})
        self.f.flush()


def clean():
    gc.collect()
    if DEV == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def mem_now():
    if DEV != "cuda":
        return {}
    free, total = torch.cuda.mem_get_info()
    res = torch.cuda.memory_reserved()
    return {"max_allocated": torch.cuda.max_memory_allocated(),
            "max_reserved": torch.cuda.max_memory_reserved(),
            "device_used": total - free, "outside_allocator": total - free - res}


# ---------------------------------------------------------------- training steps

def train_run(make, step, steps_peak=3, steps_timed=5):
    """make() -> (model, optimizer, batch); step(model, opt, batch) runs one training step.
    Returns the memory figures over the first steps_peak steps and the median step time."""
    clean()
    base = torch.cuda.memory_allocated() if DEV == "cuda" else 0
    model, opt, batch = make()
    sync()
    static = (torch.cuda.memory_allocated() - base) if DEV == "cuda" else 0
    for _ in range(steps_peak):
        step(model, opt, batch)
    sync()
    m = mem_now()
    m["allocated_before_step"] = static
    times = []
    for _ in range(steps_timed):
        sync()
        t = time.perf_counter()
        step(model, opt, batch)
        sync()
        times.append(time.perf_counter() - t)
    m["step_ms"] = round(1000 * statistics.median(times), 3)
    m["params"] = sum(p.numel() for p in model.parameters())
    m["trainable_params"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    del model, opt, batch
    clean()
    return m


def make_step(loss_of, amp=None):
    """amp: None (fp32), torch.float16 (autocast + GradScaler) or torch.bfloat16 (autocast)."""
    scaler = torch.amp.GradScaler(DEV) if amp is torch.float16 else None  # torch >= 2.3

    def step(model, opt, batch):
        if amp is None:
            loss = loss_of(model, batch)
        else:
            with torch.autocast(DEV, dtype=amp):
                loss = loss_of(model, batch)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad(set_to_none=True)
    return step


AMP = {"fp32": None, "mixed_fp16": torch.float16, "mixed_bf16": torch.bfloat16}

CNN_COLS = ["model", "batch", "resolution", "dtype", "cudnn_benchmark", "optimizer", "params",
            "max_allocated", "max_reserved", "device_used", "outside_allocator",
            "allocated_before_step", "step_ms"]


def cnn_model(name):
    if name == "xception":
        import gen_torch_reference_choices as choices
        return choices.Xception(8)
    if name == "inception_v3":
        return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=True)
    return torchvision.models.__dict__[name](weights=None)


def cnn_section():
    t = Table("cnn_train_peak.csv", CNN_COLS)
    small = ARGS.smoke
    cases = []
    models = ["resnet18", "resnet34", "resnet50", "resnet101", "vgg11", "vgg16", "alexnet",
              "mobilenet_v2", "efficientnet_b0", "inception_v3", "xception"]
    batches = [2] if small else [32, 128, 64, 8, 256]  # GPUMemNet's sizes first
    if small:
        models = ["resnet18", "mobilenet_v2", "efficientnet_b0", "inception_v3", "xception"]
    for b in batches:
        for m in models:
            cases.append((m, b, "fp32", False))
    for b in ([] if small else [32, 128]):
        for m in ["resnet18", "resnet50", "vgg16"]:
            cases.append((m, b, "fp32", True))
        for m in ["resnet50", "vgg16"]:
            cases.append((m, b, "mixed_fp16", False))
            cases.append((m, b, "mixed_bf16", False))
    for (name, b, dtype, bench) in cases:
        if left() < 0:
            log("cnn: deadline, skipping the rest")
            break
        res = 299 if name == "inception_v3" else 224
        if small:
            res = 64 if name != "inception_v3" else 75
        torch.backends.cudnn.benchmark = bench

        def make():
            torch.manual_seed(0)
            model = cnn_model(name).to(DEV).train()
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            x = torch.randn(b, 3, res, res, device=DEV)
            y = torch.randint(0, 1000, (b,), device=DEV)
            return model, opt, (x, y)

        def loss_of(model, batch):
            return F.cross_entropy(model(batch[0]), batch[1])
        try:
            r = train_run(make, make_step(loss_of, AMP[dtype]))
            r.update(model=name, batch=b, resolution=res, dtype=dtype, cudnn_benchmark=int(bench),
                     optimizer="adam")
            t.add(r)
            log("cnn", name, b, dtype, "bench" if bench else "", r.get("max_allocated"), r["step_ms"])
        except Exception as e:  # noqa: BLE001  (an OOM or a missing model is logged, not fatal)
            log("cnn FAILED", name, b, dtype, repr(e)[:300])
            clean()
    torch.backends.cudnn.benchmark = False


# ---------------------------------------------------------------- convolution workspaces

WS_COLS = ["model", "batch", "cin", "cout", "k", "stride", "padding", "groups", "h", "w", "hout", "wout",
           "input_requires_grad", "count", "fwd_extra", "out_bytes", "bwd_extra", "grad_input_bytes",
           "grad_weight_bytes", "fwd_ms", "bwd_ms"]


def conv_signatures(model, x):
    sigs = {}

    def hook(mod, inp, out):
        i = inp[0]
        key = (mod.in_channels, mod.out_channels, mod.kernel_size[0], mod.stride[0], mod.padding[0],
               mod.groups, i.shape[2], i.shape[3], out.shape[2], out.shape[3], bool(i.requires_grad))
        sigs[key] = sigs.get(key, 0) + 1
    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Conv2d)]
    model(x)  # with autograd on, so that requires_grad says which inputs get a gradient
    for h in hs:
        h.remove()
    return sigs


def probe_conv(key, b):
    cin, cout, k, s, p, g, h, w, ho, wo, rg = key
    clean()
    conv = nn.Conv2d(cin, cout, k, s, p, groups=g, bias=False).to(DEV)
    x = torch.randn(b, cin, h, w, device=DEV, requires_grad=rg)
    for _ in range(2):  # warm (algorithm choice, handles), then measure
        clean()
        base = torch.cuda.memory_allocated() if DEV == "cuda" else 0
        sync()
        t = time.perf_counter()
        y = conv(x)
        sync()
        fwd_ms = 1000 * (time.perf_counter() - t)
        fwd_peak = (torch.cuda.max_memory_allocated() - base) if DEV == "cuda" else 0
        gy = torch.randn_like(y)
        sync()
        if DEV == "cuda":
            torch.cuda.reset_peak_memory_stats()
        base2 = torch.cuda.memory_allocated() if DEV == "cuda" else 0
        t = time.perf_counter()
        wanted = (x, conv.weight) if rg else (conv.weight,)
        grads = torch.autograd.grad(y, wanted, gy)
        sync()
        bwd_ms = 1000 * (time.perf_counter() - t)
        bwd_peak = (torch.cuda.max_memory_allocated() - base2) if DEV == "cuda" else 0
        gi = grads[0].numel() * 4 if rg else 0
        gw = grads[-1].numel() * 4
        ob = y.numel() * 4
        del y, gy, grads
    return {"fwd_extra": fwd_peak - ob, "out_bytes": ob, "bwd_extra": bwd_peak - gi - gw,
            "grad_input_bytes": gi, "grad_weight_bytes": gw, "fwd_ms": round(fwd_ms, 3),
            "bwd_ms": round(bwd_ms, 3)}


def workspace_section():
    t = Table("conv_workspace.csv", WS_COLS)
    for name in ["resnet18", "resnet50", "vgg16", "xception"]:
        for b in ([2] if ARGS.smoke else [32, 128]):
            if left() < 0:
                log("workspace: deadline")
                return
            try:
                model = cnn_model(name).to(DEV).train()
                res = 64 if ARGS.smoke else 224
                x = torch.randn(1, 3, res, res, device=DEV)
                sigs = conv_signatures(model, x)
                del model, x
                for key, n in sorted(sigs.items()):
                    r = probe_conv(key, b)
                    cin, cout, k, s, p, g, h, w, ho, wo, rg = key
                    r.update(model=name, batch=b, cin=cin, cout=cout, k=k, stride=s, padding=p, groups=g,
                             h=h, w=w, hout=ho, wout=wo, input_requires_grad=int(rg), count=n)
                    t.add(r)
                log("workspace", name, b, len(sigs), "convs")
            except Exception as e:  # noqa: BLE001
                log("workspace FAILED", name, b, repr(e)[:300])
                clean()


# ---------------------------------------------------------------- transformers

TR_COLS = ["model", "batch", "seq_len", "dtype", "attention", "attention_used", "checkpointing",
           "optimizer", "lora_r", "lora_targets", "use_dora", "weight_dtype", "adapter_dtype", "params", "trainable_params", "max_allocated",
           "max_reserved", "device_used", "outside_allocator", "allocated_before_step", "step_ms",
           "library"]

HF = {
    "bert-base": ("bert", dict()),
    "bert-large": ("bert", dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                intermediate_size=4096)),
    "gpt2": ("gpt2", dict()),
    "gpt2-medium": ("gpt2", dict(n_embd=1024, n_layer=24, n_head=16)),
    "gpt2-large": ("gpt2", dict(n_embd=1280, n_layer=36, n_head=20)),
    "tinyllama-1.1b": ("llama", dict(vocab_size=32000, hidden_size=2048, intermediate_size=5632,
                                     num_hidden_layers=22, num_attention_heads=32, num_key_value_heads=4,
                                     max_position_embeddings=2048)),
    "llama2-7b": ("llama", dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                                num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                                max_position_embeddings=4096)),
}


def hf_model(name, attention, weight_dtype):
    import transformers as tf
    kind, kw = HF[name]
    if kind == "bert":
        cfg = tf.BertConfig(num_labels=2, **kw)
        cls = tf.AutoModelForSequenceClassification
    elif kind == "gpt2":
        cfg = tf.GPT2Config(**kw)
        cls = tf.AutoModelForCausalLM
    else:
        cfg = tf.LlamaConfig(**kw)
        cls = tf.AutoModelForCausalLM
    old = torch.get_default_dtype()
    torch.set_default_dtype(weight_dtype)
    try:
        with torch.device(DEV):
            try:
                model = cls.from_config(cfg, attn_implementation=attention)
            except TypeError:  # a release without the keyword: the config's field
                cfg._attn_implementation = attention
                model = cls.from_config(cfg)
    finally:
        torch.set_default_dtype(old)
    return model, cfg


def transformer_cases():
    if ARGS.smoke:
        return [("gpt2", 1, 32, "fp32", "eager", False, 0), ("vit_b_16", 1, 0, "fp32", "sdpa", False, 0)]
    def four(model, b, seq):  # SDPA and eager attention, each in fp32 and under bf16 autocast
        return [(model, b, seq, d, a, False, 0) for a in ("sdpa", "eager") for d in ("fp32", "mixed_bf16")]
    # (model, batch, seq_len, dtype, attention, checkpointing, LoRA rank), in the order they ran
    return (four("bert-base", 32, 512) + [
        ("bert-base", 32, 512, "mixed_fp16", "sdpa", False, 0),
        ("bert-base", 32, 512, "fp32", "sdpa", True, 0),
        ("bert-large", 8, 512, "fp32", "sdpa", False, 0),
        ("bert-large", 8, 512, "mixed_fp16", "sdpa", False, 0)
    ] + four("gpt2", 8, 1024) + [
        ("gpt2", 8, 1024, "fp32", "sdpa", True, 0),
        ("gpt2-medium", 8, 1024, "mixed_bf16", "sdpa", False, 0),
        ("gpt2-large", 8, 512, "fp32", "sdpa", False, 0),
        ("gpt2-large", 8, 512, "fp32", "eager", False, 0),
        ("gpt2-large", 8, 512, "mixed_bf16", "sdpa", False, 0),
        ("vit_b_16", 64, 0, "fp32", "sdpa", False, 0),
        ("vit_b_16", 64, 0, "mixed_bf16", "sdpa", False, 0),
        ("vit_l_16", 32, 0, "mixed_bf16", "sdpa", False, 0),
        ("tinyllama-1.1b", 4, 1024, "mixed_bf16", "sdpa", False, 0),
        ("tinyllama-1.1b", 4, 1024, "mixed_bf16", "sdpa", True, 0),
        ("tinyllama-1.1b", 4, 1024, "mixed_bf16", "sdpa", False, 8),
        ("tinyllama-1.1b", 4, 1024, "mixed_bf16", "eager", False, 0),
        ("llama2-7b", 2, 1024, "bf16", "sdpa", False, 8),
    ])


def dora_cases():
    """DoRA (peft's use_dora) where LoRA ran above: its magnitudes, the weight's norm every step
    and the kept base results (costmodel/op_dora.c, modelled from peft's source; not yet
    measured on a GPU). The same cases, run after transformer_cases."""
    if ARGS.smoke:
        return []
    return [("tinyllama-1.1b", 4, 1024, "mixed_bf16", "sdpa", False, 8),
            ("tinyllama-1.1b", 4, 1024, "mixed_bf16", "sdpa", True, 8)]


def transformer_section():
    t = Table("transformer_train_peak.csv", TR_COLS)
    try:
        import transformers
        lib = "transformers " + transformers.__version__
    except ImportError:
        lib = None
    for (name, b, seq, dtype, attn, ckpt, lora), dora in ([(c, False) for c in transformer_cases()] +
                                                           [(c, True) for c in dora_cases()]):
        if left() < 0:
            log("transformer: deadline")
            return
        info = {}

        def make():
            torch.manual_seed(0)
            wd = torch.bfloat16 if dtype == "bf16" else torch.float32
            if name.startswith("vit"):
                model = torchvision.models.__dict__[name](weights=None).to(DEV)
                info["used"] = "torchvision MultiheadAttention"
                x = torch.randn(b, 3, 224, 224, device=DEV)
                y = torch.randint(0, 1000, (b,), device=DEV)
                batch = (x, y)
            else:
                if lib is None:
                    raise RuntimeError("transformers is not installed")
                model, cfg = hf_model(name, attn, wd)
                info["used"] = getattr(model.config, "_attn_implementation", "?")
                ids = torch.randint(0, cfg.vocab_size, (b, seq), device=DEV)
                labels = torch.randint(0, 2, (b,), device=DEV) if HF[name][0] == "bert" else ids
                batch = (ids, labels)
                if ckpt:
                    model.gradient_checkpointing_enable()
                if lora:
                    import peft
                    targets = ["q_proj", "v_proj"] if HF[name][0] == "llama" else ["query", "value"]
                    model = peft.get_peft_model(model, peft.LoraConfig(r=lora, lora_alpha=2 * lora,
                                                                       target_modules=targets,
                                                                       lora_dropout=0.0, use_dora=dora))
                    info["lora_targets"] = "attention.q,attention.v"
                    info["adapter_dtype"] = str(next(p.dtype for n, p in model.named_parameters()
                                                     if "lora_" in n)).replace("torch.", "")
            info["weight_dtype"] = str(next(model.parameters()).dtype).replace("torch.", "")
            model.train()
            opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
            return model, opt, batch

        def loss_of(model, batch):
            if name.startswith("vit"):
                return F.cross_entropy(model(batch[0]), batch[1])
            kw = {} if HF[name][0] == "bert" else {"use_cache": False}
            return model(input_ids=batch[0], labels=batch[1], **kw).loss
        try:
            r = train_run(make, make_step(loss_of, AMP.get(dtype)))
            r.update(model=name, batch=b, seq_len=seq, dtype=dtype, attention=attn,
                     attention_used=info.get("used"), checkpointing=int(ckpt), optimizer="adamw",
                     lora_r=lora or "", lora_targets=info.get("lora_targets", ""), use_dora=int(dora) if lora else "",
                     weight_dtype=info.get("weight_dtype"), adapter_dtype=info.get("adapter_dtype", ""),
                     library=lib if not name.startswith("vit") else "torchvision " + torchvision.__version__)
            t.add(r)
            log("transformer", name, b, seq, dtype, attn, "ckpt" if ckpt else "",
                ("dora" if dora else "lora") if lora else "",
                r.get("max_allocated"), r["step_ms"])
        except Exception as e:  # noqa: BLE001
            log("transformer FAILED", name, b, seq, dtype, attn, repr(e)[:400])
            traceback.print_exc(limit=3)
            clean()


# ---------------------------------------------------------------- NAS-Bench-201 latency

def nb201_section():
    import gen_torch_reference_choices as choices
    path = None
    for cand in [os.path.join(HERE, "help_nb201_latency_pascal.csv")]:
        if os.path.exists(cand):
            path = cand
    with open(path) as f:
        rows = [r for r in csv.DictReader(f) if int(r["index"]) % 100 == 0]
    if ARGS.smoke:
        rows = rows[:2]
    t = Table("nb201_latency.csv", ["index", "arch_str", "batch", "latency_ms", "min_ms"])
    for batch in ([1, 2] if ARGS.smoke else [1, 32, 256]):
        for r in rows:
            if left() < 0:
                log("nb201: deadline")
                return
            edges = [e.split("~")[0] for e in r["arch_str"].replace("+", "").split("|") if e]
            torch.manual_seed(0)
            model = choices.TinyNetwork(16, 5, edges, 10).to(DEV).eval()
            x = torch.randn(batch, 3, 32, 32, device=DEV)
            times = []
            with torch.no_grad():
                for i in range(13):
                    sync()
                    t0 = time.perf_counter()
                    model(x)
                    sync()
                    if i >= 3:
                        times.append(1000 * (time.perf_counter() - t0))
            t.add({"index": r["index"], "arch_str": r["arch_str"], "batch": batch,
                   "latency_ms": round(statistics.median(times), 4), "min_ms": round(min(times), 4)})
        log("nb201 batch", batch, "done")


# ---------------------------------------------------------------- CUDA context by stage

CONTEXT_CHILD = r'''
import json, sys, time
stages = []
try:
    import pynvml
    pynvml.nvmlInit()
    H = pynvml.nvmlDeviceGetHandleByIndex(0)
    nvml = lambda: pynvml.nvmlDeviceGetMemoryInfo(H).used
except Exception as e:
    nvml = lambda: None
stages.append({"stage": "before CUDA init", "nvml_used": nvml()})
import torch, torch.nn as nn, torch.nn.functional as F, torchvision
def rec(name):
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    stages.append({"stage": name, "nvml_used": nvml(), "cuda_used": total - free, "total": total,
                   "reserved": torch.cuda.memory_reserved(), "allocated": torch.cuda.memory_allocated()})
    print(json.dumps(stages[-1]), flush=True)
t = time.time()
x = torch.ones((1, 1)).to("cuda"); rec("torch.ones((1, 1)).to('cuda')")
a = torch.randn(1024, 1024, device="cuda"); b = a @ a; rec("fp32 matmul (cuBLAS)")
c = a.bfloat16() @ a.bfloat16(); rec("bf16 matmul")
conv = nn.Conv2d(64, 64, 3, padding=1).cuda()
y = conv(torch.randn(8, 64, 56, 56, device="cuda", requires_grad=True)); rec("conv2d forward (cuDNN)")
y.sum().backward(); rec("conv2d backward")
m = torchvision.models.resnet18().cuda().train(); opt = torch.optim.Adam(m.parameters(), 1e-3)
for _ in range(2):
    F.cross_entropy(m(torch.randn(8, 3, 224, 224, device="cuda")), torch.zeros(8, dtype=torch.long, device="cuda")).backward(); opt.step(); opt.zero_grad()
rec("resnet18 training steps (batch 8, Adam)")
q = torch.randn(4, 8, 512, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
o = F.scaled_dot_product_attention(q, q, q, is_causal=True); o.sum().backward(); rec("SDPA bf16 forward+backward")
q = torch.randn(4, 8, 512, 64, device="cuda", requires_grad=True)
o = F.scaled_dot_product_attention(q, q, q); o.sum().backward(); rec("SDPA fp32 forward+backward")
del m, opt, y, o, q, a, b, c; torch.cuda.empty_cache(); rec("after empty_cache")
stages.append({"stage": "seconds", "nvml_used": round(time.time() - t, 2)})
print("RESULT " + json.dumps(stages), flush=True)
'''


CONTEXT_TABLE = None


def context_section(loadings=("LAZY",)):
    global CONTEXT_TABLE
    if CONTEXT_TABLE is None:
        CONTEXT_TABLE = Table("cuda_context.csv", ["loading", "stage", "nvml_used", "cuda_used", "total",
                                                   "reserved", "allocated"])
    t = CONTEXT_TABLE
    for loading in loadings:
        if left() < 30:
            log("context: deadline")
            return
        env = dict(os.environ, CUDA_MODULE_LOADING=loading)
        try:
            p = subprocess.run([sys.executable, "-c", CONTEXT_CHILD], env=env, capture_output=True,
                               text=True, timeout=max(30, min(120, left())))
            line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
            if not line:
                log("context", loading, "FAILED", p.stdout[-1500:], p.stderr[-1500:])
                continue
            for s in json.loads(line[0][7:]):
                s["loading"] = loading
                t.add(s)
            log("context", loading, "done")
        except subprocess.TimeoutExpired as e:
            log("context", loading, "timed out", (e.stdout or "")[-800:] if isinstance(e.stdout, str) else "")


def env_info():
    info = {"torch": torch.__version__, "torchvision": torchvision.__version__,
            "python": sys.version.split()[0], "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
            "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32 if DEV == "cuda" else None}
    for mod in ["transformers", "peft"]:
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = None
    if DEV == "cuda":
        p = torch.cuda.get_device_properties(0)
        info.update(device=p.name, total_memory=p.total_memory, sm_count=p.multi_processor_count,
                    capability="%d.%d" % (p.major, p.minor))
        try:
            info["nvidia_smi"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,"
                                                 "clocks.max.sm", "--format=csv,noheader"],
                                                capture_output=True, text=True, timeout=20).stdout.strip()
        except Exception as e:  # noqa: BLE001
            info["nvidia_smi"] = repr(e)
    with open(os.path.join(ARGS.out, "env.json"), "w") as f:
        json.dump(info, f, indent=1)
    log("env", json.dumps(info))


def context_eager_section():
    context_section(("EAGER",))


# section -> seconds after start by which it stops starting work (the order they run in)
BUDGET = {"context": 45, "cnn": 175, "workspace": 215, "transformer": 345, "nb201": 400,
          "context_eager": 10 ** 9}


def main():
    global ARGS, DEV, SECTION_END
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline", type=float, default=440, help="seconds; sections stop starting work after it")
    ap.add_argument("--smoke", action="store_true", help="CPU, tiny sizes: checks the script, measures nothing")
    ap.add_argument("--sections", default=",".join(BUDGET))
    ARGS = ap.parse_args()
    os.makedirs(ARGS.out, exist_ok=True)
    DEV = "cpu" if ARGS.smoke else "cuda"
    env_info()
    for s in ARGS.sections.split(","):
        if DEV != "cuda" and s.startswith("context"):
            continue
        SECTION_END = BUDGET[s] * ARGS.deadline / 440.0
        try:
            globals()[s + "_section"]()
        except Exception:  # noqa: BLE001
            log("section", s, "FAILED")
            traceback.print_exc()
        log("section", s, "finished")


if __name__ == "__main__":
    main()
