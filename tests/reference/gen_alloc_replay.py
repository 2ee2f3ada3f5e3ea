#!/usr/bin/python3
"""What PyTorch's CUDA caching allocator reserves for a CNN training step, from a real op trace.

dnnsat's expected peak is the bytes the device holds: what is allocated at the peak, what the
caching allocator keeps reserved beside it (freed blocks too small or too split for the next
request), cuDNN workspaces and the CUDA context. Only the sum is measured on a GPU
(tests/reference/gpumemnet_cnn_a100_measured.csv). This script separates the first two without a
GPU, so that the model's allocator term can be checked on its own and what remains of a
measurement can be attributed:

1. Trace. Three training steps of the model run on the CPU under torch.profiler with
   profile_memory=True, as GPUMemNet's Test_Pipeline scripts train (model.train(), Adam(lr 1e-3)
   with foreach=True as PyTorch >= 2.0 uses on CUDA, zero_grad(set_to_none=True),
   CrossEntropyLoss, a new input batch each step). Every allocation and free of a tensor
   storage is recorded in order with its address and size.
2. Keep the tensors. Buffers that one operator allocates and frees itself (oneDNN's reorders and
   scratchpads, scalar temporaries) are CPU artifacts: an allocation freed inside the same
   top-level operator (or autograd node) that made it is dropped. cuDNN's workspaces are not
   in the trace either; the replay is the allocator without workspaces, unless
   --cudnn-workspaces adds them as an H200 measured them (conv_workspaces: input plus output
   bytes of each convolution with a kernel above 1x1 or a stride above 1).
3. Any batch size. The step is traced at batch 4 and batch 8; the two traces must match event
   for event (same operators, same order), and each size is affine in the batch (an
   activation, a gradient) or constant (a weight, an optimizer state), so the trace at batch B
   is size(4) + (size(8) - size(4)) * (B - 4) / 4, exactly.
4. Replay. The trace goes through the caching allocator's policy as PyTorch 2.x's
   c10/cuda/CUDACachingAllocator.cpp defines it (defaults: no max_split_size, no garbage
   collection, no expandable segments, one stream):
     round_size          requests rounded up to a multiple of 512 bytes (kMinBlockSize)
     get_pool            <= 1 MiB (kSmallSize): small pool, else large pool
     get_free_block      best fit: the smallest free block of the pool that is large enough,
                         the lowest address among equal sizes
     get_allocation_size a new segment when none fits: 2 MiB (kSmallBuffer) for the small pool,
                         20 MiB (kLargeBuffer) for requests under 10 MiB (kMinLargeAlloc), else
                         the request rounded up to 2 MiB (kRoundLarge)
     should_split        the block is split when the rest is >= 512 bytes (small pool) or
                         > 1 MiB (large pool); the allocation takes the block's start
     free_block          a freed block merges with free neighbours of its segment; segments are
                         never returned (no empty_cache, no OOM retry)
   Reserved = the sum of segments; the peak over the three steps is reported (the first
   backward sets it: freed activations and earlier gradients are too small for the next
   stage's gradients). No code of PyTorch's is used; the rules are restated from its source.

Output (CSV on stdout, written to torch_alloc_replay.csv with --write): model, resolution,
batch, allocated_peak_bytes (the most bytes allocated at once, 512-rounded), reserved_peak_bytes
(segments at the peak), for torchvision resnet18/34/50, vgg16, mobilenet_v2, efficientnet_b0,
inception_v3 (299, aux_logits off) and Xception (as tests/reference/gen_torch_reference_choices.py
writes timm's legacy model, 224) at batch 32, 64, 128 and 256; 1000 classes, fp32.

Rerun (from the repository root; Debian's python3-torch 1.13.1 and python3-torchvision, about
5 minutes and 2 GiB of RAM on two cores):
    /usr/bin/python3 tests/reference/gen_alloc_replay.py --write
Where one model's reserve grows (each new segment with its phase: forward, backward, optimizer;
about 15 seconds):
    /usr/bin/python3 tests/reference/gen_alloc_replay.py --explain resnet18:256
With cuDNN's workspaces (the traces record shapes: a few minutes per model), the figures of
docs/memory-accuracy.md's H200 section:
    /usr/bin/python3 tests/reference/gen_alloc_replay.py --cudnn-workspaces --models resnet18,...
"""

import argparse
import bisect
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["resnet18", "resnet34", "resnet50", "vgg16", "mobilenet_v2", "efficientnet_b0", "inception_v3",
          "xception"]
BATCHES = [32, 64, 128, 256]
TRACE_BATCHES = (4, 8)

# The allocator's constants (c10/cuda/CUDACachingAllocator.cpp)
MIN_BLOCK = 512                 # kMinBlockSize
SMALL_SIZE = 1 << 20            # kSmallSize
SMALL_BUFFER = 2 << 20          # kSmallBuffer
LARGE_BUFFER = 20 << 20         # kLargeBuffer
MIN_LARGE_ALLOC = 10 << 20      # kMinLargeAlloc
ROUND_LARGE = 2 << 20           # kRoundLarge


def build_model(name):
    import torch
    import torchvision
    if name == "xception":
        sys.path.insert(0, HERE)
        from gen_torch_reference_choices import Xception
        return Xception(), 224
    if name == "inception_v3":
        return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False), 299
    return getattr(torchvision.models, name)(weights=None), 224


def trace(name, batch, steps=3, workspaces=False):
    """[(address, signed bytes, top-level op index or None, phase)] of `steps` training steps;
    with `workspaces`, cuDNN's as conv_workspaces() adds them."""
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    model, res = build_model(name)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    loss_fn = nn.CrossEntropyLoss()
    with torch.profiler.profile(profile_memory=True, record_shapes=workspaces) as prof:
        for step in range(steps):
            with torch.profiler.record_function("step%d" % step):
                inputs = torch.rand(batch, 3, res, res)
                labels = torch.randint(0, 1000, (batch,))
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(inputs), labels)
                loss.backward()
                opt.step()
                del inputs, labels, loss
    return events_of(prof, workspaces)


def events_of(prof, workspaces=False):
    """The allocations and frees a profiler recorded, in time order: (address, signed bytes,
    top-level op index or None, phase), the phase from record_function scopes named stepN and
    Optimizer.step* and from autograd's engine. With `workspaces` (a trace recorded with
    record_shapes), cuDNN's workspaces as conv_workspaces() gives them."""
    events, tops, convs = [], [0], {}

    def walk(node, top, phase):
        fields = node.extra_fields
        if type(fields).__name__.endswith("Allocation"):
            events.append((node.start_time_ns, fields.ptr, fields.alloc_size, top, phase))
        # the phase, for --explain: "stepN forward" until autograd or the optimizer runs
        if node.name.startswith("step"):
            phase = node.name + " forward"
        elif phase is not None and node.name.startswith("autograd::engine"):
            phase = phase.split()[0] + " backward"
        elif phase is not None and node.name.startswith("Optimizer.step"):
            phase = phase.split()[0] + " optimizer"
        if not node.name.startswith("step") and top is None and (
                node.name.startswith("aten::") or node.name.startswith("autograd::engine")):
            tops[0] += 1
            top = tops[0]
        if workspaces and top is not None and node.name in ("aten::conv2d", "aten::convolution_backward"):
            convs.setdefault(top, (node.name, fields.inputs.shapes))
        for child in node.children:
            walk(child, top, phase)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root, None, None)
    events.sort(key=lambda e: e[0])
    if workspaces:
        events = conv_workspaces(events, convs)
    return [e[1:] for e in events]


def conv_workspaces(events, convs):
    """The trace with cuDNN's convolution workspaces added, as measured on an H200 with cuDNN 9.19
    (tests/reference/h200_conv_workspace.csv: every distinct convolution of four CNNs alone):
    a dense convolution whose kernel is larger than 1x1 or whose stride is above 1 asks for its
    input plus its output (cuDNN's kernels run channels-last and the tensors are NCHW: both are
    transposed into the workspace); a stride-1 1x1 convolution and a depthwise one ask for none,
    and so does a convolution of a 3-channel image at stride 1. The forward's workspace is
    allocated after its output and freed before the next operator; the backward's, one after
    the input's gradient (when there is one) and one after the weight's. The workspace events
    carry no operator (top None), so that kept() keeps them."""
    by_top = {}
    for i, e in enumerate(events):
        if e[2] > 0 and e[3] in convs:
            by_top.setdefault(e[3], []).append(i)
    extra, fake = [], [0]

    def add(after, size, phase):
        fake[0] -= 1
        t = events[after][0]
        extra.append((t + 0.25, fake[0], size, None, phase))
        extra.append((t + 0.5, fake[0], -size, None, phase))
    for top, (name, shapes) in convs.items():
        allocs = by_top.get(top)
        if not allocs:
            continue
        if name == "aten::conv2d":
            x, w = shapes[0], shapes[1]
            out_bytes = events[allocs[0]][2]
        else:                       # convolution_backward(grad_output, input, weight, ...)
            x, w = shapes[1], shapes[2]
            out_bytes = 4 * math.prod(shapes[0])
        if len(x) != 4 or len(w) != 4:
            continue
        in_bytes = 4 * math.prod(x)
        cout, cin_g, kh, kw = w
        depthwise = cin_g == 1 and x[1] > 1
        strided = out_bytes // max(1, 4 * x[0] * cout) < x[2] * x[3]
        if depthwise or (kh == 1 and kw == 1 and not strided) or (x[1] <= 4 and not strided):
            continue
        ws = in_bytes + out_bytes
        if name == "aten::conv2d":
            add(allocs[0], ws, events[allocs[0]][4])
            continue
        for i in allocs[:2]:            # the gradients of the input (if any) and of the weight
            if events[i][2] in (in_bytes, 4 * math.prod(w)):
                add(i, ws, events[i][4])
    return sorted(events + extra, key=lambda e: e[0])


def tensors_only(events):
    """Drops the buffers an operator allocates and frees itself."""
    drop, opened = set(), {}
    for i, (ptr, size, top, _) in enumerate(events):
        if size > 0:
            opened[ptr] = i
        elif ptr in opened:
            j = opened.pop(ptr)
            if top is not None and events[j][2] == top:
                drop.update((i, j))
    return drop


class Block:
    __slots__ = ("addr", "size", "free", "prev", "next", "small")

    def __init__(self, addr, size, small):
        self.addr, self.size, self.small = addr, size, small
        self.free, self.prev, self.next = True, None, None


class CachingAllocator:
    """The policy of the docstring: best fit, splitting, merging, segments kept."""

    def __init__(self):
        self.pools = {True: [], False: []}      # sorted (size, addr) of free blocks
        self.blocks = {}
        self.reserved = self.allocated = self.peak_reserved = self.peak_allocated = 0
        self.next_addr = 0

    def _insert(self, b):
        bisect.insort(self.pools[b.small], (b.size, b.addr))
        self.blocks[(b.small, b.addr)] = b

    def _remove(self, b):
        pool = self.pools[b.small]
        i = bisect.bisect_left(pool, (b.size, b.addr))
        del pool[i]
        del self.blocks[(b.small, b.addr)]

    def malloc(self, nbytes):
        size = MIN_BLOCK if nbytes < MIN_BLOCK else MIN_BLOCK * -(-nbytes // MIN_BLOCK)
        small = size <= SMALL_SIZE
        pool = self.pools[small]
        i = bisect.bisect_left(pool, (size, -1))
        if i < len(pool):
            b = self.blocks[(small, pool[i][1])]
            self._remove(b)
        else:
            seg = SMALL_BUFFER if small else LARGE_BUFFER if size < MIN_LARGE_ALLOC else \
                ROUND_LARGE * -(-size // ROUND_LARGE)
            b = Block(self.next_addr, seg, small)
            self.next_addr += seg + (1 << 40)   # segments are never adjacent
            self.reserved += seg
            self.peak_reserved = max(self.peak_reserved, self.reserved)
        rest = b.size - size
        if (small and rest >= MIN_BLOCK) or (not small and rest > SMALL_SIZE):
            r = Block(b.addr + size, rest, small)
            b.size = size
            r.prev, r.next = b, b.next
            if b.next is not None:
                b.next.prev = r
            b.next = r
            self._insert(r)
        b.free = False
        self.allocated += b.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return b

    def _absorb(self, left, right):
        """Merges the free block `right` into its neighbour `left`; returns left."""
        left.size += right.size
        left.next = right.next
        if right.next is not None:
            right.next.prev = left
        return left

    def free(self, b):
        b.free = True
        self.allocated -= b.size
        if b.prev is not None and b.prev.free:
            self._remove(b.prev)
            b = self._absorb(b.prev, b)
        if b.next is not None and b.next.free:
            self._remove(b.next)
            b = self._absorb(b, b.next)
        self._insert(b)


def replay(events, alloc=None, phases=None, on_grow=None):
    """Replays (address, signed bytes) events through `alloc` (a new CachingAllocator, or one that
    already holds blocks, such as the weights). With `phases` (one per event, None outside the
    steps) it also returns the reserve's growth by phase, and calls on_grow(i, phase, size,
    grown, alloc) for each event that grew it. Returns (alloc, growth)."""
    alloc, live, growth = alloc or CachingAllocator(), {}, {}
    for i, (ptr, size) in enumerate(events):
        before = alloc.reserved
        if size > 0:
            live[ptr] = alloc.malloc(size)
        elif ptr in live:
            alloc.free(live.pop(ptr))
        grown = alloc.reserved - before
        if grown and phases is not None:
            phase = phases[i] or "outside the steps"
            growth[phase] = growth.get(phase, 0) + grown
            if on_grow is not None:
                on_grow(i, phase, size, grown, alloc)
    return alloc, growth


def kept(t):
    """Trace t without the operators' own buffers (tensors_only)."""
    drop = tensors_only(t)
    return [e for i, e in enumerate(t) if i not in drop]


def at_batch(small, large, batch, batches=TRACE_BATCHES):
    """The trace at `batch` from the traces at `batches` (see the docstring, step 3)."""
    b0, b1 = batches
    if len(small) != len(large):
        raise SystemExit("traces at batch %d and %d differ in length (%d, %d)" % (b0, b1, len(small), len(large)))
    out = []
    for (p, s0, _, _), (_, s1, _, _) in zip(small, large):
        if (s0 > 0) != (s1 > 0):
            raise SystemExit("traces at batch %d and %d differ in order" % (b0, b1))
        a0, a1 = abs(s0), abs(s1)
        n = a0 + (a1 - a0) * (batch - b0) // (b1 - b0)
        out.append((p, n if s0 > 0 else -n))
    return out


def traces(name, workspaces=False):
    """The traces at TRACE_BATCHES with the operators' own buffers dropped."""
    out = []
    for batch in TRACE_BATCHES:
        # each trace's own: with two threads an operator may take scratch buffers at one batch
        # and not at the other (resnet18: 6 more events at batch 8), which at_batch would
        # otherwise take for a change of order
        out.append(kept(trace(name, batch, workspaces=workspaces)))
    return out[0], out[1]


def explain(name, batch, workspaces=False):
    """Prints where the reserve grows: each new segment of 1 MiB or more, with the phase of the
    step that asked for it, then the growth by phase and, in the first backward, by request
    size (the gradients of each size level that found no free block large enough)."""
    t0, t1 = traces(name, workspaces)
    by_size = {}
    mib = float(1 << 20)

    def grew(i, phase, size, grown, alloc):
        if phase == "step0 backward":
            key = round(size / mib, 1)
            by_size[key] = by_size.get(key, 0) + grown
        if size >= 1 << 20:
            print("%5d  %-18s  %11.1f  %11.1f  %13.0f  %12.0f" % (i, phase, size / mib, grown / mib,
                                                                  alloc.allocated / mib, alloc.reserved / mib))

    print("event  phase               request MiB  segment MiB  allocated MiB  reserved MiB")
    alloc, growth = replay(at_batch(t0, t1, batch), phases=[e[3] for e in t0], on_grow=grew)
    print("allocated peak %.0f MiB, reserved peak %.0f MiB" % (alloc.peak_allocated / mib, alloc.peak_reserved / mib))
    for phase in sorted(growth):
        print("  reserve grown in %-18s %8.0f MiB" % (phase, growth[phase] / mib))
    print("  first backward's new segments by request size (MiB): " +
          ", ".join("%g: %.0f" % (k, v / mib) for k, v in sorted(by_size.items())))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="write torch_alloc_replay.csv next to this script")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--cudnn-workspaces", action="store_true",
                    help="add cuDNN's convolution workspaces as measured on an H200 (conv_workspaces)")
    ap.add_argument("--explain", metavar="MODEL:BATCH",
                    help="print where the reserve of MODEL at BATCH grows (new segments by phase), nothing else")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(2)
    if args.explain:
        name, _, batch = args.explain.partition(":")
        if name not in MODELS or not batch.isdigit():
            ap.error("--explain: MODEL:BATCH with MODEL one of %s" % ", ".join(MODELS))
        explain(name, int(batch), args.cudnn_workspaces)
        return
    rows = ["model,resolution,batch,allocated_peak_bytes,reserved_peak_bytes"]
    for name in args.models.split(","):
        t0, t1 = traces(name, args.cudnn_workspaces)
        res = build_model(name)[1]
        for batch in BATCHES:
            a = replay(at_batch(t0, t1, batch))[0]
            rows.append("%s,%d,%d,%d,%d" % (name, res, batch, a.peak_allocated, a.peak_reserved))
            print("%-16s batch %3d  allocated %7.0f MiB  reserved %7.0f MiB  (+%.1f%%)" % (
                name, batch, a.peak_allocated / 2**20, a.peak_reserved / 2**20,
                (a.peak_reserved / a.peak_allocated - 1) * 100), file=sys.stderr)
    text = "\n".join(rows) + "\n"
    sys.stdout.write(text)
    if args.write:
        with open(os.path.join(HERE, "torch_alloc_replay.csv"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
