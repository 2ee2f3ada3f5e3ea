#!/usr/bin/python3
"""Differential validity reference: which configurations PyTorch itself accepts.

For every built-in template (schemas/templates/*.json) and every example model
(examples/models/*.json), draws seeded random configurations around and beyond
the edges where a configuration stops being buildable (sequence longer than the
position table, heads not dividing the width, feature maps pooled or strided
down to nothing, batch norm over a single value, odd sizes that make residual
branches disagree), builds each one in PyTorch exactly as the model file
describes it and runs one forward pass in training mode (batch norm uses batch
statistics, as in a training step) under torch.no_grad() on a tiny batch of
real data (token ids spanning the input's declared id_range: the whole
vocabulary, positions 0..seq_len-1, token types 0 and 1). A configuration is valid when PyTorch builds and runs it
without raising; the exception type and its first line are kept otherwise.

The model file is interpreted, not re-typed: this script walks the same layer
list as costmodel/model_build.c (ops, branches + merge, repeat, choice, if,
use with def arguments, named tensors and scopes), evaluates the same
expression language (integers floor-divide, reals divide, make_divisible is
torchvision's), and maps each operator to the torch.nn module or function the
model format says it mirrors (docs/model-format.md). Shapes are never checked
here: torch raises or not. Weights are created without initialisation
(torch.nn.utils.skip_init) since only success and shapes matter.

Output: one JSON line per configuration,
  {"model": "bert", "file": "schemas/templates/bert.json", "config": {...},
   "valid": false, "error": "IndexError: index out of range in self",
   "shape": null}
with "shape" the output tensor's shape when valid, and "beyond_range": true on
the configurations whose resolution lies below the hyperparameter's declared
minimum (dnnsat refuses those as requests; the test sets them directly to
compare the validity expression itself). The C test
tests/unit/test_validity.c reads it and needs no torch.

Run (Debian's python3-torch 1.13, CPU; about 5 minutes on 2 cores):
  /usr/bin/python3 tests/reference/validity/gen_validity.py \
      > tests/reference/validity/validity_torch.jsonl
Deterministic: seeded per model; torch's own RNG is seeded per configuration.
"""
import json
import math
import os
import random
import re
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

# ---------------------------------------------------------------- expressions

TOKEN = re.compile(r"\s*(?:(\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\.\d+)|(\d+)|([A-Za-z_][A-Za-z_0-9]*)|"
                   r"('[^']*')|(//|==|!=|<=|>=|&&|\|\||[-+*/%<>!?:(),]))")


def tokenize(text):
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise SyntaxError("bad expression %r at %d" % (text, pos))
        pos = m.end()
        real, integer, name, string, punct = m.groups()
        if real is not None:
            out.append(("num", float(real)))
        elif integer is not None:
            out.append(("num", int(integer)))
        elif name is not None:
            out.append(("name", name))
        elif string is not None:
            out.append(("str", string[1:-1]))
        else:
            out.append(("op", punct))
    out.append(("end", None))
    return out


def make_divisible(v, d):
    new_v = max(d, int(v + d / 2) // d * d)
    if new_v < 0.9 * v:
        new_v += d
    return new_v


def div(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    return a // b


FUNCS = {
    "min": min, "max": max,
    "floor": lambda x: int(math.floor(x)), "ceil": lambda x: int(math.ceil(x)),
    "round": lambda x: int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1),
    "ceil_div": lambda a, b: -((-a) // b),
    "make_divisible": make_divisible,
}


class Expr:
    """Recursive descent over the grammar of costmodel/expr_parse.c."""

    def __init__(self, text, env):
        self.toks = tokenize(text)
        self.i = 0
        self.env = env

    def peek(self):
        return self.toks[self.i]

    def take(self, op=None):
        t = self.toks[self.i]
        if op is not None and t != ("op", op):
            raise SyntaxError("expected %s" % op)
        self.i += 1
        return t

    def accept(self, op):
        if self.toks[self.i] == ("op", op):
            self.i += 1
            return True
        return False

    def run(self):
        v = self.ternary()
        if self.peek()[0] != "end":
            raise SyntaxError("trailing text")
        return v

    def ternary(self):
        c = self.lor()
        if self.accept("?"):
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            return a if c else b
        return c

    def lor(self):
        v = self.land()
        while self.accept("||"):
            w = self.land()
            v = int(bool(v) or bool(w))
        return v

    def land(self):
        v = self.cmp()
        while self.accept("&&"):
            w = self.cmp()
            v = int(bool(v) and bool(w))
        return v

    def cmp(self):
        a = self.add()
        t = self.peek()
        if t[0] == "op" and t[1] in ("==", "!=", "<", "<=", ">", ">="):
            self.take()
            b = self.add()
            return int({"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b,
                        ">": a > b, ">=": a >= b}[t[1]])
        return a

    def add(self):
        v = self.mul()
        while True:
            if self.accept("+"):
                v = v + self.mul()
            elif self.accept("-"):
                v = v - self.mul()
            else:
                return v

    def mul(self):
        v = self.unary()
        while True:
            if self.accept("*"):
                v = v * self.unary()
            elif self.accept("//"):
                v = int(v // self.unary())
            elif self.accept("/"):
                v = div(v, self.unary())
            elif self.accept("%"):
                v = v % self.unary()
            else:
                return v

    def unary(self):
        if self.accept("-"):
            return -self.unary()
        if self.accept("+"):
            return self.unary()
        if self.accept("!"):
            return int(not self.unary())
        return self.primary()

    def primary(self):
        kind, val = self.take()
        if kind in ("num", "str"):
            return val
        if kind == "name":
            if self.accept("("):
                args = []
                if not self.accept(")"):
                    args.append(self.ternary())
                    while self.accept(","):
                        args.append(self.ternary())
                    self.take(")")
                return FUNCS[val](*args)
            return self.env(val)
        if (kind, val) == ("op", "("):
            v = self.ternary()
            self.take(")")
            return v
        raise SyntaxError("unexpected %r" % (val,))


# ---------------------------------------------------------------- the model walk

class Scope:
    def __init__(self, parent=None, binds=None):
        self.parent = parent
        self.names = {}
        self.binds = dict(binds or {})


class Walker:
    """Runs a model file's layer list on real tensors."""

    def __init__(self, model, config):
        self.model = model
        self.cfg = config
        self.defs = model.get("defs", {})

    # values
    def lookup(self, sc, name):
        s = sc
        while s is not None:
            if name in s.binds:
                return s.binds[name]
            s = s.parent
        if name in self.cfg:
            return self.cfg[name]
        raise NameError(name)

    def val(self, sc, v):
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, (int, float)):
            return v
        if isinstance(v, str):
            return Expr(v, lambda n: self.lookup(sc, n)).run()
        raise TypeError("bad value %r" % (v,))

    def ival(self, sc, item, key, dflt=None):
        if key not in item:
            return dflt
        return self.val(sc, item[key])

    def pair(self, sc, item, key, dflt):
        v = item.get(key, dflt)
        if isinstance(v, list):
            return tuple(self.val(sc, x) for x in v)
        x = self.val(sc, v) if not (isinstance(v, str) and v == "same") else v
        return x if x == "same" else (x, x)

    def tensor(self, sc, name):
        s = sc
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        raise NameError("no tensor " + name)

    # walking
    def run_list(self, items, sc, x):
        for it in items:
            x = self.run_item(it, sc, x)
        return x

    def run_item(self, it, sc, prev):
        x = self.tensor(sc, it["input"]) if "input" in it else prev
        if "op" in it:
            ins = [self.tensor(sc, n) for n in it["inputs"]] if "inputs" in it else [x]
            out = run_op(self, sc, it, ins)
        elif "branches" in it:
            outs = [self.run_list(b, Scope(sc), x) for b in it["branches"]]
            out = merge(it.get("merge", "add"), it.get("dim", 1), outs)
        elif "repeat" in it:
            n = self.val(sc, it["repeat"])
            out = x
            for k in range(max(n, 0)):
                inner = Scope(sc, {it["index"]: k} if "index" in it else None)
                out = self.run_list(it["body"], inner, out)
        elif "choice" in it:
            v = self.cfg[it["choice"]]
            opts = it["options"]
            key = str(v)
            body = opts[key] if key in opts else opts["default"]
            out = self.run_list(body, Scope(sc), x)
        elif "if" in it:
            c = self.val(sc, it["if"])
            body = it["then"] if c else it.get("else", [])
            out = self.run_list(body, Scope(sc), x)
        else:
            d = self.defs[it["use"]]
            args = it.get("args", {})
            binds = {a: self.val(sc, args[a]) for a in d.get("args", [])}
            # a def body sees its arguments and the hyperparameters, not the caller's tensors
            out = self.run_list(d["body"], Scope(None, binds), x)
        if "name" in it:
            sc.names[it["name"]] = out
        return out


def merge(how, dim, outs):
    if len(outs) == 1:
        return outs[0]
    if how == "concat":
        return torch.cat(outs, dim=dim)
    r = outs[0]
    for o in outs[1:]:
        r = r + o if how == "add" else r * o
    return r


def mk(cls, *args, **kw):
    """A module with uninitialised weights (only success and shapes matter)."""
    return torch.nn.utils.skip_init(cls, *args, **kw)


def run_op(w, sc, it, ins):
    op = it["op"]
    x = ins[0]
    iv = lambda k, d=None: w.ival(sc, it, k, d)
    b = lambda k, d: bool(it.get(k, d))
    if op in ("conv1d", "conv2d"):
        cin = x.shape[1]
        groups = cin if b("depthwise", False) else iv("groups", 1)
        cout = iv("out_channels", cin if b("depthwise", False) else None)
        dims = 1 if op == "conv1d" else 2
        cls = nn.Conv1d if dims == 1 else nn.Conv2d
        k = w.pair(sc, it, "kernel", 1)
        s = w.pair(sc, it, "stride", 1)
        p = w.pair(sc, it, "padding", 0)
        d = w.pair(sc, it, "dilation", 1)
        if dims == 1:
            k, s, d = k[0], s[0], d[0]
            p = p if p == "same" else p[0]
        m = mk(cls, cin, cout, k, stride=s, padding=p, dilation=d, groups=groups, bias=b("bias", True))
        return m(x)
    if op == "linear":
        return mk(nn.Linear, x.shape[-1], iv("out_features"), bias=b("bias", True))(x)
    if op in ("matmul", "bmm"):
        y = ins[1]
        return torch.matmul(x, y.transpose(-1, -2) if b("transpose_b", False) else y)
    if op == "embedding":
        return mk(nn.Embedding, iv("num_embeddings"), iv("embedding_dim"))(x)
    if op == "batchnorm":
        cls = nn.BatchNorm2d if x.dim() == 4 else nn.BatchNorm1d
        m = cls(x.shape[1], affine=b("affine", True))
        m.train()
        return m(x)
    if op == "layernorm":
        return nn.LayerNorm(x.shape[-1], elementwise_affine=b("affine", True))(x)
    if op == "groupnorm":
        return nn.GroupNorm(iv("groups"), x.shape[1], affine=b("affine", True))(x)
    if op in ("relu", "silu", "hardswish", "relu6", "sigmoid", "tanh"):
        return {"relu": F.relu, "silu": F.silu, "hardswish": F.hardswish, "relu6": F.relu6,
                "sigmoid": torch.sigmoid, "tanh": torch.tanh}[op](x)
    if op == "gelu":
        a = it.get("approximate", "none")
        if a == "tanh_python":
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
        return F.gelu(x, approximate=a)
    if op == "softmax":
        return torch.softmax(x, dim=iv("dim", -1))
    if op == "dropout":
        return F.dropout(x, p=float(it.get("p", 0.5)), training=True)
    if op == "scale":
        return x * float(it["factor"])
    if op in ("maxpool1d", "maxpool2d", "avgpool1d", "avgpool2d"):
        k = w.pair(sc, it, "kernel", 1)
        s = w.pair(sc, it, "stride", it["kernel"]) if "stride" in it else k
        p = w.pair(sc, it, "padding", 0)
        ceil_mode = b("ceil_mode", False)
        if op.endswith("1d"):
            k, s, p = k[0], s[0], p[0]
        if op.startswith("max"):
            cls = nn.MaxPool1d if op.endswith("1d") else nn.MaxPool2d
            return cls(k, stride=s, padding=p, ceil_mode=ceil_mode)(x)
        cls = nn.AvgPool1d if op.endswith("1d") else nn.AvgPool2d
        return cls(k, stride=s, padding=p, ceil_mode=ceil_mode,
                   count_include_pad=b("count_include_pad", True))(x)
    if op in ("adaptive_avgpool2d", "adaptive_maxpool2d"):
        o = w.pair(sc, it, "output_size", 1)
        f = F.adaptive_avg_pool2d if op == "adaptive_avgpool2d" else F.adaptive_max_pool2d
        return f(x, o)
    if op == "flatten":
        return torch.flatten(x, iv("start_dim", 1), iv("end_dim", -1))
    if op == "reshape":
        return x.reshape([w.val(sc, v) for v in it["shape"]])
    if op == "permute":
        return x.permute(*it["dims"])
    if op == "transpose":
        return x.transpose(iv("dim0"), iv("dim1"))
    if op == "contiguous":
        return x.contiguous()
    if op == "slice":
        return x.narrow(iv("dim", 0), iv("start", 0), iv("length"))
    if op in ("add", "mul"):
        return x + ins[1] if op == "add" else x * ins[1]
    if op == "concat":
        return torch.cat(ins, dim=iv("dim", 1))
    if op == "attention":
        return attention(x, iv("heads"), b("bias", True), b("causal", False),
                         float(it.get("dropout", 0.0)), it.get("qkv", "separate"))
    if op in ("lstm", "gru"):
        cls = nn.LSTM if op == "lstm" else nn.GRU
        m = cls(x.shape[-1], iv("hidden_size"), num_layers=iv("num_layers", 1),
               bias=b("bias", True), batch_first=True, bidirectional=b("bidirectional", False))
        return m(x)[0]
    if op == "identity":
        return x
    if op == "zero":
        return x.mul(0.0)
    if op == "cross_entropy":
        return F.cross_entropy(x if x.dim() == 2 else x.transpose(1, 2),
                               torch.zeros([x.shape[0]] + list(x.shape[2:]), dtype=torch.long))
    raise ValueError("unknown op " + op)


def attention(x, heads, bias, causal, p, qkv):
    """Self-attention as Hugging Face eager code runs it (BertSelfAttention for
    separate projections, GPT2Attention for a fused one)."""
    n, l, e = x.shape
    if qkv == "fused":
        q, k, v = mk(nn.Linear, e, 3 * e, bias=bias)(x).split(e, dim=2)
    else:
        q, k, v = (mk(nn.Linear, e, e, bias=bias)(x) for _ in range(3))
    d = e // heads
    split = lambda t: t.view(n, l, heads, d).permute(0, 2, 1, 3)
    q, k, v = split(q), split(k), split(v)
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
    if causal:
        mask = torch.tril(torch.ones(l, l, dtype=torch.bool))
        s = torch.where(mask, s, torch.tensor(torch.finfo(s.dtype).min))
    pr = F.dropout(torch.softmax(s, dim=-1), p=p, training=True)
    ctx = torch.matmul(pr, v).permute(0, 2, 1, 3).contiguous().reshape(n, l, e)
    return mk(nn.Linear, e, e, bias=bias)(ctx)


def make_inputs(w, model):
    """The model's inputs as real tensors: float images/features from a normal
    distribution; int64 ids 0, 1, 2, ... modulo their declared id_range
    (positions 0 .. seq_len-1), the last one the largest id (the last token
    of the vocabulary, the last position), or 0 .. 1 without an id_range."""
    sc = Scope()
    first = None
    for i, spec in enumerate(model["inputs"]):
        shape = [w.val(sc, d) for d in spec["shape"]]
        if spec.get("dtype", "float") == "int64":
            hi = w.val(sc, spec["id_range"]) if "id_range" in spec else 2
            numel = 1
            for s in shape:
                numel *= s
            t = torch.arange(numel, dtype=torch.long) % max(hi, 1)
            t[-1] = max(hi, 1) - 1      # the largest id occurs
            t = t.reshape(shape)
        else:
            t = torch.randn(shape)
        if i == 0:
            first = t
        if "name" in spec:
            sc.names[spec["name"]] = t
    return sc, first


def run_config(model, config):
    w = Walker(model, config)
    for rule in model.get("rules", []):
        # a model's own rule stands for a check of the library the model file describes, which
        # the torch.nn modules built here do not make (torchvision's VisionTransformer asserts
        # image_size % patch_size == 0; an nn.Conv2d of stride patch floors): raised as it would
        if not w.val(Scope(), rule["require"]):
            raise AssertionError(rule.get("message", rule["require"]))
    torch.manual_seed(0)
    with torch.no_grad():
        sc, x = make_inputs(w, model)
        out = w.run_list(model["layers"], sc, x)
    return list(out.shape)


# ---------------------------------------------------------------- sampling

def ri(r, lo, hi):
    return r.randint(lo, hi)


def edge(r, valid_max, spread):
    """An int near a limit: below, at, or beyond it."""
    return max(1, valid_max + r.randint(-spread, spread))


def divisor_or_not(r, n, hi):
    """A head count: a divisor of n half of the time, any count up to hi otherwise."""
    if r.random() < 0.5:
        ds = [d for d in range(1, min(n, hi) + 1) if n % d == 0]
        return r.choice(ds)
    return r.randint(1, hi)


def s_mlp(r, hp):
    return {"batch_size": ri(r, 1, 2), "in_features": ri(r, 1, 64), "hidden": ri(r, 1, 64),
            "depth": ri(r, 1, 4), "activation": r.choice(hp["activation"]["values"]),
            "dropout": r.choice(hp["dropout"]["values"]), "num_classes": ri(r, 1, 20)}


def s_vgg(r, hp):
    c = {"batch_size": ri(r, 1, 2), "resolution": ri(r, 32, 72), "width": ri(r, 1, 6),
         "fc": ri(r, 1, 32), "batch_norm": r.choice(["false", "true"]), "num_classes": ri(r, 1, 10)}
    for i in range(1, 6):
        c["convs%d" % i] = ri(r, 1, 2)
    return c


def s_alexnet(r, hp):
    return {"batch_size": ri(r, 1, 2), "resolution": ri(r, 63, 120), "width": ri(r, 1, 6),
            "num_classes": ri(r, 1, 10)}


def s_resnet(r, hp):
    c = {"batch_size": ri(r, 1, 2), "resolution": ri(r, 32, 80), "block": r.choice(["basic", "bottleneck"]),
         "width": ri(r, 1, 6), "num_classes": ri(r, 1, 10)}
    for i in range(1, 5):
        c["layers%d" % i] = ri(r, 1, 2)
    return c


def s_mobilenet(r, hp):
    return {"batch_size": ri(r, 1, 2), "resolution": ri(r, 32, 72),
            "width_mult": round(r.uniform(0.1, 1.0), 2), "t": ri(r, 1, 6), "num_classes": ri(r, 1, 10)}


def s_nb201(r, hp):
    c = {"batch_size": ri(r, 1, 2), "resolution": ri(r, 4, 24), "C": ri(r, 1, 6),
         "cells_per_stage": ri(r, 1, 2), "num_classes": ri(r, 1, 10)}
    for i in range(6):
        c["edge%d" % i] = r.choice(hp["edge%d" % i]["values"])
    return c


def s_lstm(r, hp):
    return {"batch_size": ri(r, 1, 2), "seq_len": ri(r, 1, 12), "vocab": ri(r, 1, 200),
            "embed": ri(r, 1, 32), "hidden": ri(r, 1, 32), "layers": ri(r, 1, 3)}


def s_bert(r, hp):
    hidden = ri(r, 1, 48)
    maxpos = ri(r, 1, 48)
    return {"batch_size": ri(r, 1, 2), "seq_len": edge(r, maxpos, 6), "vocab": ri(r, 1, 200),
            "hidden": hidden, "layers": ri(r, 1, 2), "heads": divisor_or_not(r, hidden, 16),
            "intermediate": ri(r, 1, 48), "max_position": maxpos}


def s_gpt(r, hp):
    n_embd = ri(r, 1, 48)
    npos = ri(r, 1, 48)
    return {"batch_size": ri(r, 1, 2), "seq_len": edge(r, npos, 6), "vocab": ri(r, 1, 200),
            "n_embd": n_embd, "n_layer": ri(r, 1, 2), "n_head": divisor_or_not(r, n_embd, 16),
            "n_positions": npos}


def s_cnn5(r, hp):
    c = {"batch_size": ri(r, 1, 2), "resolution": ri(r, 32, 40), "dense": ri(r, 1, 32),
         "num_classes": ri(r, 1, 10)}
    for i in range(1, 6):
        c["c%d" % i] = ri(r, 1, 6)
        c["k%d" % i] = ri(r, 1, 15)
    return c


def s_efficientnet(r, hp):
    return {"batch_size": ri(r, 1, 2), "resolution": ri(r, 32, 64),
            "width_mult": round(r.uniform(0.1, 0.8), 2), "depth_mult": round(r.uniform(0.1, 1.2), 2),
            "num_classes": ri(r, 1, 10)}


def s_inception(r, hp):
    return {"batch_size": ri(r, 1, 2), "resolution": ri(r, 75, 110), "num_classes": ri(r, 1, 10)}


def s_transformer24(r, hp):
    c = {"batch_size": ri(r, 1, 2), "seq_len": ri(r, 1, 8)}
    ok = r.random() < 0.5         # all heads dividing 768, or any head counts
    for i in range(24):
        c["heads%d" % i] = divisor_or_not(r, 768, 64) if not ok else \
            r.choice([d for d in range(1, 65) if 768 % d == 0])
        c["ffn%d" % i] = ri(r, 1, 16)
    return c


def s_xception(r, hp):
    return {"batch_size": ri(r, 1, 2), "resolution": ri(r, 32, 64), "middle_blocks": ri(r, 0, 2),
            "num_classes": ri(r, 1, 10)}


# (file, sampler, count, fixed extra configurations: bert-base and gpt2 just beyond
# their position tables; the valid edge case at a small width to keep it fast)
MODELS = [
    ("schemas/templates/mlp.json", s_mlp, 120, []),
    ("schemas/templates/vgg.json", s_vgg, 100, []),
    ("schemas/templates/alexnet.json", s_alexnet, 80, []),
    ("schemas/templates/resnet.json", s_resnet, 160, []),
    ("schemas/templates/mobilenet_v2.json", s_mobilenet, 140, []),
    ("schemas/templates/nb201.json", s_nb201, 300, []),
    ("schemas/templates/lstm_lm.json", s_lstm, 100, []),
    ("schemas/templates/bert.json", s_bert, 330,
     [{"batch_size": 1, "seq_len": 512, "layers": 1, "vocab": 100, "hidden": 16, "heads": 2, "intermediate": 16},
      {"batch_size": 1, "seq_len": 513, "layers": 1}, {"batch_size": 1, "seq_len": 5000, "layers": 1}]),
    ("schemas/templates/gpt.json", s_gpt, 330,
     [{"batch_size": 1, "seq_len": 1024, "n_layer": 1, "vocab": 100, "n_embd": 16, "n_head": 2},
      {"batch_size": 1, "seq_len": 1025, "n_layer": 1},
      {"batch_size": 1, "seq_len": 2048, "n_layer": 1}]),
    ("examples/models/cnn5.json", s_cnn5, 100, []),
    ("examples/models/efficientnet_b0.json", s_efficientnet, 120, []),
    ("examples/models/inception_v3.json", s_inception, 50, []),
    ("examples/models/transformer24.json", s_transformer24, 120, []),
    ("examples/models/xception.json", s_xception, 50, []),
]


def clamp(hp, c):
    """Keeps every drawn value inside the hyperparameter's declared min/max (a
    value outside is a bad request, not an invalid configuration)."""
    out = {}
    for k, v in c.items():
        h = hp[k]
        if h["type"] == "int":
            v = min(max(int(v), int(h.get("min", v))), int(h.get("max", v)))
        elif h["type"] == "real":
            v = min(max(float(v), float(h.get("min", v))), float(h.get("max", v)))
        out[k] = v
    return out


BELOW_MIN = 20


def below_min(model, sampler):
    """Configurations whose resolution lies below the declared minimum (a
    request dnnsat refuses before any validity rule): they check that the
    validity expression itself agrees with PyTorch beyond the declared range,
    where feature maps are pooled or strided down to nothing."""
    hp = model["hyperparameters"]
    if "resolution" not in hp:
        return []
    r = random.Random("dnnsat-validity-below-" + model["name"])
    lo = int(hp["resolution"]["min"])
    out = []
    for _ in range(BELOW_MIN):
        c = clamp(hp, sampler(r, hp))
        c["resolution"] = r.randint(max(1, lo // 4), lo - 1)
        out.append(c)
    return out


def main():
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)     # uninitialised weights: no slow denormal arithmetic
    t0 = time.time()
    for rel, sampler, count, extra in MODELS:
        model = json.load(open(os.path.join(ROOT, rel)))
        hp = model["hyperparameters"]
        r = random.Random("dnnsat-validity-" + model["name"])
        configs = [clamp(hp, c) for c in extra] + [clamp(hp, sampler(r, hp)) for _ in range(count)]
        configs += below_min(model, sampler)
        nvalid = 0
        for c in configs:
            full = {k: h["default"] for k, h in hp.items()}
            full.update(c)
            rec = {"model": model["name"], "file": rel, "config": c}
            if any(c[k] < hp[k]["min"] for k in c if hp[k]["type"] != "categorical"):
                rec["beyond_range"] = True
            try:
                shape = run_config(model, full)
                rec.update(valid=True, error=None, shape=shape)
                nvalid += 1
            except Exception as e:  # PyTorch's verdict: any exception rejects the configuration
                msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
                rec.update(valid=False, error="%s: %s" % (type(e).__name__, msg[:200]), shape=None)
            sys.stdout.write(json.dumps(rec, sort_keys=True) + "\n")
        sys.stdout.flush()
        print("%-16s %4d configurations, %4d invalid  (%.0f s)" % (model["name"], len(configs),
              len(configs) - nvalid, time.time() - t0), file=sys.stderr)


if __name__ == "__main__":
    main()
