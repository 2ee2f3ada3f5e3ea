#!/usr/bin/python3
"""Record, from real PyTorch (CPU), the numbers dnnsat's C cost model is tested against.

What it measures, per model (torchvision CNNs, and BERT-base / GPT-2 small written in plain
torch.nn so that they follow the op sequence of Hugging Face's eager implementations):

  params                  sum of p.numel() over model.parameters() (unique parameters, so the
                          GPT-2 lm_head tied to wte counts once).
  macs                    forward multiply-accumulates at batch 1, counted with forward hooks:
                            Conv2d  out.numel() * (Cin/groups) * kh * kw
                            Linear  out.numel()/out_features * in_features * out_features
                            Conv1D  (HF GPT-2's addmm layer) same as Linear
                          plus, for the transformers, the two attention matmuls QK^T and PV
                          (batch*heads*T*T*head_dim each; GPT-2's causal mask does not reduce
                          them: HF computes the full matrix and masks it with torch.where).
                          Nothing else (no BN, activations, pooling, adds, softmax, LayerNorm,
                          embeddings). See "macs_ops" in the JSON.
  saved_activation_bytes  bytes of the tensors that autograd saves for backward during one
                          train-mode forward pass (model.train(), input requires_grad=False),
                          captured with torch.autograd.graph.saved_tensors_hooks. Each
                          underlying storage is counted once (key: the storage's identity,
                          same as storage().data_ptr() for live CPU storages; size:
                          storage().nbytes(), so a saved view keeps its whole storage), and
                          storages that belong to model parameters or buffers (weights saved
                          by conv/linear/LayerNorm, BN running stats, HF's position_ids /
                          token_type_ids / causal-mask buffers) are excluded. The model input is
                          included (the first conv saves the image, embeddings save the ids)
                          and also reported alone as saved_input_bytes. Also given: the split by
                          dtype, the split by the set of autograd nodes that hold each storage
                          (found by walking the graph after the forward pass), and, at the
                          smaller size only, a per-module breakdown: each newly seen storage is
                          charged to the innermost module executing when it was packed (a stack
                          kept by forward pre-hooks and hooks; functional ops written inside a
                          container's forward, e.g. the attention matmuls or a residual add,
                          are charged to that container).
  output_bytes_sum        (smaller size only, for debugging) the sum over leaf modules of the
                          bytes of their outputs; an in-place ReLU's output is counted again.
  *_native_dropout        the same measurement with every nn.Dropout replaced by
                          torch.native_dropout, the fused op F.dropout uses on CUDA. On CPU,
                          torch 1.13's F.dropout is input * noise and saves a float32 noise
                          tensor; native_dropout saves a bool mask (1 byte per element). Only for
                          models that contain nn.Dropout.

The training loss is not part of any model here: GPT-2's numbers stop at the logits (a
cross-entropy on them would save another B*T*50257*4 bytes of log-softmax output).

How: CPU, torch.set_num_threads(2), torch.manual_seed(0), fp32, torchvision models built with
weights=None (no download). Inputs: CNNs 3x224x224 (inception_v3 3x299x299) at batch 2 and 8;
BERT batch 2 at sequence lengths 128 and 512, GPT-2 batch 2 at 128 and 1024 (random token ids).
Debian's torch uses the reference BLAS (BLAS_INFO=generic, ~3 GFLOP/s), so the transformers are
run for real on the CPU only at batch 2 x 128; that result is asserted identical (every field)
to the same measurement on the meta device (shapes and storages, no arithmetic; autograd saves
the same tensors), and the other sizes and the MAC counts are then measured on meta. The CNNs
run on the CPU throughout (convolutions go through oneDNN and are fast). The whole script takes
about a minute and a half and under 2 GiB of RAM on two cores.

Rerun (from the repository root):
    /usr/bin/python3 tests/reference/gen_torch_reference.py > tests/reference/torch_reference.json
It writes the JSON to stdout, also writes torch_reference.csv next to this script (or to
--csv PATH), and prints a comparison with shared/reference-data/torchvision_reference.csv and
progress to stderr. Use Debian's /usr/bin/python3 (python3-torch 1.13.1, torchvision 0.14.1).
"""

import argparse
import collections
import csv
import gc
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

GENERATOR = "tests/reference/gen_torch_reference.py"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

MACS_OPS = ("Conv2d: out.numel()*(Cin/groups)*kh*kw; Linear and HF Conv1D: "
            "out.numel()/out_features*in_features*out_features; transformers also the two "
            "attention matmuls QK^T and PV (batch*heads*T*T*head_dim each, full matrix even "
            "under GPT-2's causal mask). Not counted: BN, LayerNorm, activations, pooling, "
            "adds, softmax, embeddings, dropout. Batch 1.")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# attention-matmul counter (the transformer modules below report into it when it is active)
_ATTN = {"active": False, "macs": 0}


def _count_matmul(a, b):
    if not _ATTN["active"]:
        return
    batch = 1
    for d in torch.broadcast_shapes(a.shape[:-2], b.shape[:-2]):
        batch *= d
    _ATTN["macs"] += batch * a.shape[-2] * a.shape[-1] * b.shape[-1]


# --------------------------------------------------------------------------------------------
# BERT-base (mirrors transformers' BertModel eager code, absolute position embeddings)
class BertConfig:
    vocab_size = 30522
    hidden_size = 768
    num_hidden_layers = 12
    num_attention_heads = 12
    intermediate_size = 3072
    max_position_embeddings = 512
    type_vocab_size = 2
    layer_norm_eps = 1e-12
    hidden_dropout_prob = 0.1
    attention_probs_dropout_prob = 0.1
    pad_token_id = 0


class GELUActivation(nn.Module):
    """HF activations.GELUActivation: exact (erf) GELU."""

    def forward(self, input):
        return F.gelu(input)


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)
        self.register_buffer("position_ids", torch.arange(c.max_position_embeddings).expand((1, -1)),
                             persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long),
                             persistent=False)

    def forward(self, input_ids, token_type_ids=None, past_key_values_length=0):
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        position_ids = self.position_ids[:, past_key_values_length: seq_length + past_key_values_length]
        if token_type_ids is None:
            buffered = self.token_type_ids[:, :seq_length]
            token_type_ids = buffered.expand(input_shape[0], seq_length)
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        embeddings += position_embeddings
        embeddings = self.LayerNorm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_attention_heads = c.num_attention_heads
        self.attention_head_size = c.hidden_size // c.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(c.hidden_size, self.all_head_size)
        self.key = nn.Linear(c.hidden_size, self.all_head_size)
        self.value = nn.Linear(c.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(c.attention_probs_dropout_prob)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None):
        mixed_query_layer = self.query(hidden_states)
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        query_layer = self.transpose_for_scores(mixed_query_layer)
        kt = key_layer.transpose(-1, -2)
        _count_matmul(query_layer, kt)
        attention_scores = torch.matmul(query_layer, kt)
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        _count_matmul(attention_probs, value_layer)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        return (context_layer,)


class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, hidden_states, attention_mask=None):
        self_outputs = self.self(hidden_states, attention_mask)
        attention_output = self.output(self_outputs[0], hidden_states)
        return (attention_output,) + self_outputs[1:]


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size)
        self.intermediate_act_fn = GELUActivation()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.intermediate_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, hidden_states, attention_mask=None):
        attention_output = self.attention(hidden_states, attention_mask)[0]
        # apply_chunking_to_forward with chunk_size_feed_forward = 0 is a plain call
        intermediate_output = self.intermediate(attention_output)
        layer_output = self.output(intermediate_output, attention_output)
        return (layer_output,)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None):
        for layer_module in self.layer:
            hidden_states = layer_module(hidden_states, attention_mask)[0]
        return (hidden_states,)


class BertPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        first_token_tensor = hidden_states[:, 0]
        pooled_output = self.dense(first_token_tensor)
        return self.activation(pooled_output)


class BertModel(nn.Module):
    def __init__(self, c=BertConfig):
        super().__init__()
        self.config = c
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)
        self.pooler = BertPooler(c)
        _hf_init(self, c.pad_token_id)

    def forward(self, input_ids):
        batch_size, seq_length = input_ids.size()
        device = input_ids.device
        attention_mask = torch.ones((batch_size, seq_length), device=device)
        buffered = self.embeddings.token_type_ids[:, :seq_length]
        token_type_ids = buffered.expand(batch_size, seq_length)
        # ModuleUtilsMixin.get_extended_attention_mask
        extended = attention_mask[:, None, None, :].to(dtype=torch.float32)
        extended = (1.0 - extended) * torch.finfo(torch.float32).min
        embedding_output = self.embeddings(input_ids, token_type_ids=token_type_ids)
        sequence_output = self.encoder(embedding_output, extended)[0]
        pooled_output = self.pooler(sequence_output)
        return (sequence_output, pooled_output)


# --------------------------------------------------------------------------------------------
# GPT-2 small (mirrors transformers' GPT2LMHeadModel eager code)
class GPT2Config:
    vocab_size = 50257
    n_positions = 1024
    n_embd = 768
    n_layer = 12
    n_head = 12
    n_inner = None
    layer_norm_epsilon = 1e-5
    resid_pdrop = 0.1
    embd_pdrop = 0.1
    attn_pdrop = 0.1


class Conv1D(nn.Module):
    """HF pytorch_utils.Conv1D: a linear layer with transposed weight, computed with addmm."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.in_features, self.out_features = nx, nf
        w = torch.empty(nx, nf)
        nn.init.normal_(w, std=0.02)
        self.weight = nn.Parameter(w)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


class NewGELUActivation(nn.Module):
    """HF activations.NewGELUActivation ("gelu_new"), written out as HF writes it."""

    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                               (input + 0.044715 * torch.pow(input, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c, layer_idx=None):
        super().__init__()
        max_positions = c.n_positions
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(
                1, 1, max_positions, max_positions),
            persistent=False)
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)
        self.embed_dim = c.n_embd
        self.num_heads = c.n_head
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        self.scale_attn_weights = True
        self.layer_idx = layer_idx
        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(c.attn_pdrop)
        self.resid_dropout = nn.Dropout(c.resid_pdrop)

    def _attn(self, query, key, value):
        kt = key.transpose(-1, -2)
        _count_matmul(query, kt)
        attn_weights = torch.matmul(query, kt)
        if self.scale_attn_weights:
            attn_weights = attn_weights / torch.full(
                [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length].to(torch.bool)
        mask_value = torch.finfo(attn_weights.dtype).min
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype).to(attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        _count_matmul(attn_weights, value)
        attn_output = torch.matmul(attn_weights, value)
        return attn_output, attn_weights

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def forward(self, hidden_states, use_cache=True):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)
        present = (key, value) if use_cache else None
        attn_output, attn_weights = self._attn(query, key, value)
        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.c_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)
        return (attn_output, present)


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, c):
        super().__init__()
        embed_dim = c.n_embd
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = NewGELUActivation()
        self.dropout = nn.Dropout(c.resid_pdrop)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class GPT2Block(nn.Module):
    def __init__(self, c, layer_idx=None):
        super().__init__()
        hidden_size = c.n_embd
        inner_dim = c.n_inner if c.n_inner is not None else 4 * hidden_size
        self.ln_1 = nn.LayerNorm(hidden_size, eps=c.layer_norm_epsilon)
        self.attn = GPT2Attention(c, layer_idx=layer_idx)
        self.ln_2 = nn.LayerNorm(hidden_size, eps=c.layer_norm_epsilon)
        self.mlp = GPT2MLP(inner_dim, c)

    def forward(self, hidden_states, use_cache=True):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_outputs = self.attn(hidden_states, use_cache=use_cache)
        attn_output = attn_outputs[0]
        outputs = attn_outputs[1:]
        hidden_states = attn_output + residual
        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = residual + feed_forward_hidden_states
        return (hidden_states,) + outputs


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_dim = c.n_embd
        self.wte = nn.Embedding(c.vocab_size, self.embed_dim)
        self.wpe = nn.Embedding(c.n_positions, self.embed_dim)
        self.drop = nn.Dropout(c.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(c, layer_idx=i) for i in range(c.n_layer)])
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=c.layer_norm_epsilon)

    def forward(self, input_ids, use_cache=True):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        past_length = 0
        position_ids = torch.arange(past_length, input_shape[-1] + past_length, dtype=torch.long,
                                    device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).view(-1, input_shape[-1])
        inputs_embeds = self.wte(input_ids)
        position_embeds = self.wpe(position_ids)
        hidden_states = inputs_embeds + position_embeds
        hidden_states = self.drop(hidden_states)
        output_shape = input_shape + (hidden_states.size(-1),)
        presents = ()
        for block in self.h:
            outputs = block(hidden_states, use_cache=use_cache)
            hidden_states = outputs[0]
            if use_cache:
                presents = presents + (outputs[1],)
        hidden_states = self.ln_f(hidden_states)
        hidden_states = hidden_states.view(output_shape)
        return hidden_states, presents


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c=GPT2Config):
        super().__init__()
        self.config = c
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        _hf_init(self, None)
        # GPT2PreTrainedModel._init_weights: c_proj weights get std 0.02/sqrt(2*n_layer)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * c.n_layer))
        self.tie_weights()

    def tie_weights(self):
        self.lm_head.weight = self.transformer.wte.weight

    def forward(self, input_ids):
        hidden_states, presents = self.transformer(input_ids)
        lm_logits = self.lm_head(hidden_states)
        return (lm_logits, presents)


def _hf_init(model, padding_idx):
    """PreTrainedModel._init_weights for these classes (initializer_range 0.02)."""
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.padding_idx is not None:
                with torch.no_grad():
                    m.weight[m.padding_idx].zero_()
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


# --------------------------------------------------------------------------------------------
# measurement
def _tensors(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)


def _sptr(t):
    """Identity of the tensor's storage: the address of its c10::StorageImpl. For CPU tensors
    this is one-to-one with storage().data_ptr() while the storage lives (views share it), and
    unlike data_ptr it also works for meta tensors."""
    return t.storage()._storage._cdata


def _snbytes(t):
    return t.storage().nbytes()


def _dt(dtype):
    return str(dtype).replace("torch.", "")


def count_macs(model, inp):
    """Forward MACs at the given input (batch 1), conv/linear by hooks + attention matmuls."""
    by = collections.Counter()

    def conv_hook(m, i, o):
        by["conv2d"] += o.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]

    def lin_hook(m, i, o):
        by["linear"] += o.numel() // m.out_features * m.in_features * m.out_features

    def convt_hook(m, i, o):
        # each input element scatters one kernel into each output channel of its group (fvcore)
        by["conv_transpose2d"] += i[0].numel() * (m.out_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]

    handles = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            handles.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, (nn.Linear, Conv1D)):
            handles.append(m.register_forward_hook(lin_hook))
        elif isinstance(m, nn.ConvTranspose2d):
            handles.append(m.register_forward_hook(convt_hook))
    model.eval()
    _ATTN["active"], _ATTN["macs"] = True, 0
    try:
        with torch.no_grad():
            model(inp)
    finally:
        _ATTN["active"] = False
        for h in handles:
            h.remove()
    if _ATTN["macs"]:
        by["attention_matmul"] = _ATTN["macs"]
    return sum(by.values()), dict(by)


UNEXPOSED = "(unexposed: e.g. inside CopySlices of an in-place op on a view)"


def measure_saved(model, inp, detail):
    """One train-mode forward under saved_tensors_hooks; see the module docstring."""
    model.train()
    excluded_ptrs = set()
    for t in list(model.parameters()) + list(model.buffers()):
        excluded_ptrs.add(_sptr(t))
    input_ptrs = {_sptr(t) for t in _tensors(inp)}
    names = {m: (n or "<root>") for n, m in model.named_modules()}
    stack = []
    # pack returns an index into `keep`, not the tensor: a pack hook that returns an op's own
    # output makes a C++ reference cycle (output -> grad_fn -> saved output) that Python's gc
    # cannot break, and every measured graph would leak. `keep` holds every packed tensor until
    # the end, so no storage dies and has its address reused while we count.
    keep = []
    seen = {}          # ptr -> (nbytes, dtype, module)
    excluded = {}      # ptr -> nbytes (params/buffers that were saved)
    out_bytes = [0]

    def pre_hook(m, i):
        stack.append(m)

    def post_hook(m, i, o):
        stack.pop()
        if detail and not any(True for _ in m.children()):
            out_bytes[0] += sum(t.numel() * t.element_size() for t in _tensors(o))

    def pack(x):
        keep.append(x)
        ptr = _sptr(x)
        if ptr in excluded_ptrs:
            excluded[ptr] = _snbytes(x)
        elif ptr not in seen and _snbytes(x) > 0:
            seen[ptr] = (_snbytes(x), _dt(x.dtype), stack[-1] if stack else None)
        return len(keep) - 1

    def unpack(i):
        return keep[i]

    handles = []
    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre_hook))
        handles.append(m.register_forward_hook(post_hook))
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            out = model(inp)
    finally:
        for h in handles:
            h.remove()
    assert not stack

    # which autograd nodes hold each storage
    holders = collections.defaultdict(set)
    nodes, todo, visited = [], [t.grad_fn for t in _tensors(out) if t.grad_fn is not None], set()
    while todo:
        n = todo.pop()
        if n is None or id(n) in visited:
            continue
        visited.add(id(n))
        nodes.append(n)
        name = type(n).__name__
        for attr in dir(n):
            if not attr.startswith("_saved_"):
                continue
            try:
                v = getattr(n, attr)
            except Exception:
                continue
            for t in _tensors(v):
                if t.numel() or _snbytes(t):
                    holders[_sptr(t)].add(name)
        todo.extend(f for f, _ in n.next_functions)

    total = sum(v[0] for v in seen.values())
    by_dtype = collections.Counter()
    by_ops = collections.Counter()
    for ptr, (nb, dt, _) in seen.items():
        by_dtype[dt] += nb
        sig = "+".join(sorted(s.replace("Backward0", "").replace("Backward1", "")
                              for s in holders.get(ptr, {UNEXPOSED})))
        by_ops[sig] += nb
    res = {
        "saved_activation_bytes": total,
        "saved_bytes_by_dtype": dict(sorted(by_dtype.items())),
        "saved_input_bytes": sum(v[0] for p, v in seen.items() if p in input_ptrs),
        "saved_storages": len(seen),
        "excluded_param_buffer_bytes": sum(excluded.values()),
        "saved_bytes_by_holder_ops": dict(by_ops.most_common()),
    }
    if detail:
        res["output_bytes_sum"] = out_bytes[0]
        rows = collections.OrderedDict()
        for nb, dt, m in seen.values():
            key = names.get(m, "<none>") if m is not None else "<none>"
            if key not in rows:
                rows[key] = [key, type(m).__name__ if m is not None else "", 0, 0, {}]
            r = rows[key]
            r[2] += nb
            r[3] += 1
            if dt != "float32":
                r[4][dt] = r[4].get(dt, 0) + nb
        res["per_module_columns"] = ["module", "class", "bytes", "storages", "non_float32_bytes"]
        res["per_module"] = list(rows.values())
        assert sum(r[2] for r in res["per_module"]) == total
    del out, nodes
    keep.clear()
    gc.collect()
    return res


class NativeDropout(nn.Module):
    """nn.Dropout through torch.native_dropout, the op F.dropout takes on CUDA."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        if self.training and self.p > 0:
            return torch.native_dropout(x, self.p, True)[0]
        return x


def with_native_dropout(model):
    """Swap every nn.Dropout for NativeDropout in place; returns how many were swapped."""
    n = 0
    for parent in list(model.modules()):
        for cname, child in list(parent.named_children()):
            if isinstance(child, nn.Dropout):
                setattr(parent, cname, NativeDropout(child.p))
                n += 1
    return n


# --------------------------------------------------------------------------------------------
CNNS = [
    ("alexnet", dict(), 224),
    ("vgg16", dict(), 224),
    ("resnet18", dict(), 224),
    ("resnet34", dict(), 224),
    ("resnet50", dict(), 224),
    ("resnet101", dict(), 224),
    ("mobilenet_v2", dict(), 224),
    ("efficientnet_b0", dict(), 224),
    ("inception_v3", dict(aux_logits=False, init_weights=False), 299),
]
CNN_BATCHES = (2, 8)


def run_model(name, model, kind, sizes, make_input, extra, on_meta=False):
    """sizes: list of (batch, seq_or_res) for the saved measurements; first gets the detail.

    on_meta: this torch's CPU BLAS is Debian's reference BLAS (BLAS_INFO=generic, ~3 GFLOP/s),
    so the transformers' matmuls would take many minutes. Autograd records and saves exactly the
    same tensors whatever the device (the CPU-only branch, F.dropout's, also runs on meta), so
    the transformers run on the meta device (shapes and storages, no arithmetic), after one
    real CPU run at the first size whose full result must match the meta run exactly."""
    t0 = time.time()
    entry = dict(extra)
    entry["params"] = sum(p.numel() for p in model.parameters())
    entry["macs_ops"] = MACS_OPS
    size_key = "resolution" if kind == "cnn" else "seq_len"
    device = "cpu"
    if on_meta:
        b, s = sizes[0]
        torch.manual_seed(0)
        cpu_ref = measure_saved(model, make_input(b, s, "cpu"), detail=True)
        log(f"  {name} batch {b} {size_key} {s} on cpu: saved {cpu_ref['saved_activation_bytes']:,} B "
            f"({time.time() - t0:.1f}s)")
        model.to("meta")
        if hasattr(model, "tie_weights"):
            model.tie_weights()  # Module.to("meta") unties shared parameters
        assert sum(p.numel() for p in model.parameters()) == entry["params"], "tied weights lost"
        device = "meta"
        entry["measured_on"] = (f"cpu and meta (identical) at batch {b} {size_key} {s}; "
                                "meta elsewhere (reference BLAS makes CPU matmuls too slow)")
    else:
        entry["measured_on"] = "cpu"
    macs_list, saved_list = [], []
    for s in sorted({s for _, s in sizes}):
        total, by = count_macs(model, make_input(1, s, device))
        macs_list.append({"batch": 1, size_key: s, "macs": total, "macs_by_op": by})
    entry["macs"] = macs_list
    for k, (b, s) in enumerate(sizes):
        torch.manual_seed(0)
        r = measure_saved(model, make_input(b, s, device), detail=(k == 0))
        if on_meta and k == 0:
            assert r == cpu_ref, f"{name}: meta and cpu measurements differ"
        saved_list.append(dict({"batch": b, size_key: s}, **r))
        log(f"  {name} batch {b} {size_key} {s} on {device}: saved {r['saved_activation_bytes']:,} B "
            f"({time.time() - t0:.1f}s)")
    if with_native_dropout(model):
        for k, (b, s) in enumerate(sizes):
            torch.manual_seed(0)
            r = measure_saved(model, make_input(b, s, device), detail=False)
            saved_list[k]["saved_activation_bytes_native_dropout"] = r["saved_activation_bytes"]
            saved_list[k]["saved_bytes_by_dtype_native_dropout"] = r["saved_bytes_by_dtype"]
    entry["saved"] = saved_list
    log(f"  {name}: done in {time.time() - t0:.1f}s")
    return entry


def find_tv_reference():
    for p in (os.path.join(REPO, "shared", "reference-data", "torchvision_reference.csv"),
              "/work/shared/reference-data/torchvision_reference.csv"):
        if os.path.exists(p):
            return p
    return None


def compare_torchvision(models):
    path = find_tv_reference()
    if not path:
        log("torchvision_reference.csv not found; no comparison")
        return
    log(f"\ncomparison with {path} (its gflops column counts MACs, batch 1):")
    log(f"{'model':16} {'params':>12} {'ref params':>12} {'diff':>9}   {'GMACs':>8} {'ref':>8} {'rel':>7}")
    with open(path) as f:
        for row in csv.DictReader(f):
            m = models.get(row["model"])
            if not m:
                continue
            ref_p = int(row["num_params"])
            ref_g = float(row["gflops_torchvision_ops"])
            g = m["macs"][0]["macs"] / 1e9
            note = "  (reference includes the aux head; measured with aux_logits=False)" \
                if row["model"] == "inception_v3" else ""
            log(f"{row['model']:16} {m['params']:>12,} {ref_p:>12,} {m['params'] - ref_p:>9,}   "
                f"{g:8.3f} {ref_g:8.3f} {(g - ref_g) / ref_g:+7.2%}{note}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--csv", default=os.path.join(HERE, "torch_reference.csv"))
    ap.add_argument("--only", nargs="*", help="measure only these models (for debugging)")
    args = ap.parse_args()

    torch.set_num_threads(2)
    torch.manual_seed(0)
    t_start = time.time()
    models = collections.OrderedDict()

    def want(n):
        return not args.only or n in args.only

    for name, kw, res in CNNS:
        if not want(name):
            continue
        log(f"{name}")
        try:
            torch.manual_seed(0)
            model = getattr(torchvision.models, name)(weights=None, num_classes=1000, **kw)
        except Exception as e:  # a model this torchvision lacks
            log(f"  skipped: {e!r}")
            continue

        def make_input(b, r, device):
            g = torch.Generator().manual_seed(0)
            return torch.randn(b, 3, r, r, generator=g).to(device)

        extra = {"family": "cnn", "source": f"torchvision.models.{name}(weights=None, num_classes=1000"
                 + "".join(f", {k}={v}" for k, v in kw.items()) + ")",
                 "input": f"float32 image batch x 3 x {res} x {res}"}
        models[name] = run_model(name, model, "cnn", [(b, res) for b in CNN_BATCHES], make_input, extra)
        del model
        gc.collect()

    transformers = [
        ("bert-base-uncased", BertModel, BertConfig, 109482240, (128, 512),
         "plain-torch mirror of transformers.BertModel (with pooler), outputs "
         "(last_hidden_state, pooler_output); no attention_mask/token_type_ids passed (all-ones "
         "mask, buffered zero token types)"),
        ("gpt2", GPT2LMHeadModel, GPT2Config, 124439808, (128, 1024),
         "plain-torch mirror of transformers.GPT2LMHeadModel (lm_head tied to wte), outputs "
         "(logits, presents); no labels, so no loss"),
    ]
    for name, cls, cfg, want_params, seqs, src in transformers:
        if not want(name):
            continue
        log(f"{name}")
        torch.manual_seed(0)
        model = cls(cfg)
        n = sum(p.numel() for p in model.parameters())
        assert n == want_params, (name, n, want_params)

        def make_input(b, t, device, vocab=cfg.vocab_size):
            g = torch.Generator().manual_seed(0)
            return torch.randint(0, vocab, (b, t), generator=g).to(device)

        extra = {"family": "transformer", "source": src,
                 "input": "int64 token ids batch x seq_len (random)",
                 "config": {k: v for k, v in vars(cfg).items() if not k.startswith("_")}}
        models[name] = run_model(name, model, "transformer", [(2, t) for t in seqs], make_input, extra,
                                 on_meta=True)
        del model
        gc.collect()

    out = collections.OrderedDict()
    out["generator"] = GENERATOR
    out["regenerate"] = ("/usr/bin/python3 tests/reference/gen_torch_reference.py > "
                         "tests/reference/torch_reference.json")
    out["torch_version"] = torch.__version__
    out["torchvision_version"] = torchvision.__version__
    out["device"] = "cpu"
    out["dtype"] = "float32"
    out["notes"] = [
        "macs: batch 1 at each listed resolution / seq_len; ops per macs_ops.",
        "saved_activation_bytes: unique storages packed by torch.autograd.graph."
        "saved_tensors_hooks during one model.train() forward (input requires_grad=False), "
        "each storage counted once at storage().nbytes(), parameter and buffer storages "
        "excluded (their sum is excluded_param_buffer_bytes); includes the saved model input "
        "(saved_input_bytes).",
        "saved_bytes_by_holder_ops: bytes per set of autograd nodes (Backward0 suffix dropped) "
        "that hold the storage after the forward pass.",
        "per_module (first, smaller measurement only): each storage charged to the innermost "
        "module executing when it was first packed, i.e. usually its first consumer, not its "
        "producer (a conv output shows under the BatchNorm after it; an in-place ReLU's output "
        "under that ReLU; a functional op in a container's forward under the container). Columns "
        "in per_module_columns.",
        "saved_bytes_by_holder_ops: '" + UNEXPOSED + "' marks storages held by a node whose saved "
        "tensors Python cannot list (efficientnet_b0's nn.Dropout(inplace=True) on a flatten view).",
        "output_bytes_sum (smaller measurement only): sum of the output bytes of every leaf "
        "module; in-place ops are counted again.",
        "On CPU in torch 1.13, F.dropout is input*noise and saves a float32 noise tensor; "
        "*_native_dropout repeats the measurement with torch.native_dropout (what CUDA runs), "
        "which saves a bool mask. In the CSV, saved_activation_bytes_native_dropout equals "
        "saved_activation_bytes for models without nn.Dropout.",
        "Observed in torch 1.13: relu_ (ReLU(inplace=True)) saves its result, the same storage "
        "as its input, so it adds nothing; hardtanh_ (mobilenet_v2's ReLU6(inplace=True)) and "
        "silu_ (efficientnet's SiLU(inplace=True)) save a clone of their input, so in-place "
        "saves no memory there; max_pool2d saves int64 indices (2x the float output); "
        "BatchNorm saves its input plus float32 save_mean/save_invstd (2*C per BN); LayerNorm "
        "saves its input plus mean/rstd (2 floats per row); a 1x1 adaptive_avg_pool2d runs as "
        "mean() and saves its input; 4-D torch.matmul on permuted heads saves contiguous "
        "copies of q, k and v made by its internal reshape.",
    ]
    out["models"] = models
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")

    with open(args.csv, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["model", "family", "batch", "seq_len", "resolution", "params", "macs_batch1",
                    "saved_activation_bytes", "saved_float32_bytes", "saved_int64_bytes",
                    "saved_bool_bytes", "saved_other_dtype_bytes", "saved_input_bytes",
                    "saved_activation_bytes_native_dropout"])
        for name, m in models.items():
            macs = {x.get("seq_len", x.get("resolution")): x["macs"] for x in m["macs"]}
            for s in m["saved"]:
                size = s.get("seq_len", s.get("resolution"))
                d = s["saved_bytes_by_dtype"]
                w.writerow([name, m["family"], s["batch"], s.get("seq_len", ""), s.get("resolution", ""),
                            m["params"], macs[size], s["saved_activation_bytes"],
                            d.get("float32", 0), d.get("int64", 0), d.get("bool", 0),
                            sum(v for k, v in d.items() if k not in ("float32", "int64", "bool")),
                            s["saved_input_bytes"],
                            s.get("saved_activation_bytes_native_dropout", s["saved_activation_bytes"])])
    log(f"wrote {args.csv}")
    compare_torchvision(models)
    log(f"total {time.time() - t_start:.1f}s")


if __name__ == "__main__":
    main()
