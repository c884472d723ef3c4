"""The tensor gate's programs, one per argv[1] (argv[2]: eager or graph where a
case has both). They use nothing of tcgd: the agent probes them unmodified
(TCGD_TENSOR=fingerprint). Each prints "RESULT <digest>" (compared with and
without the agent) and writes to GATE_TRUTH what the gate checks the tensor
bundle against, taken from PyTorch in the same run.

    quickstart            the seed's tensor quick start: static_x * 2, relu(h - 5), square, captured
    transformer MODE      a small transformer's training step, eager steps or replays of a captured step
    compile               torch.compile(mode="reduce-overhead"): cudagraph trees
    two-streams           a capture that forks onto a second stream and joins back
    kill N                replays N times (each synchronized), then SIGKILLs itself
    probe-quickstart      the quick start with tcgd.probe (tools/python/examples/tensor_quickstart.py)
    probe-grads MODE      tcgd.watch_grad on a small MLP's weights and activations: eager steps, or
                          replays of a captured forward and backward
  planted bugs, for first-divergence (each with MODE eager or graph):
    stale-input MODE      the graph reads a static input the loop stopped copying into
    baked-scalar MODE     a Python float (a learning-rate schedule) baked into the captured kernel
    frozen-branch MODE    Python control flow taken once at capture
    unwritten-padding MODE  the graph's buffer is never zeroed: its padding rows hold NaN
    dropout MODE          dropout: random numbers differ, legitimately (the graph run draws one more)
    correct MODE          a correct graphed program: no divergence
  variants of those classes in a training step (tensor_expect.VARIANTS):
    stale-batch-train MODE  the loop rebinds the batch to a new tensor from step 1 on
    baked-lr-sgd MODE     SGD's learning rate, a Python float, halved by a schedule after capture
    clip-branch MODE      gradient clipping switched on from step 1 by Python, frozen off in the graph
    unwritten-bf16 MODE   a bfloat16 buffer whose padding rows the graph path never zeroes (old activations)
    correct-autocast MODE a correct graphed training step under bfloat16 autocast: no divergence
    baked-index MODE      a Python int selecting a row (table[step]) baked into the graph as a pointer
  GATE_STEPS=N and GATE_PAUSE=SECONDS (environment) make the planted bugs run N
  steps, pausing before each replay: a long run for the check action to stop.
"""
import json
import os
import signal
import sys
import time

import numpy as np
import torch

import gpu_common as g

CASE = sys.argv[1] if len(sys.argv) > 1 else "quickstart"
MODE = sys.argv[2] if len(sys.argv) > 2 else "graph"
STEPS = int(os.environ.get("GATE_STEPS", "4"))
PAUSE = float(os.environ.get("GATE_PAUSE", "0"))
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


# ---- what the gate checks observations against -------------------------------

def fingerprint(t):
    """The fingerprint of a contiguous tensor's bytes as tcgd defines it
    (collectors/tensor/fingerprint_abi.h): the wrapping sum of wordHash over
    the little-endian 8-byte words, and the statistics over finite elements."""
    raw = t.detach().contiguous().cpu().view(torch.uint8).numpy().tobytes()
    pad = (-len(raw)) % 8
    words = np.frombuffer(raw + b"\0" * pad, dtype="<u8")
    with np.errstate(over="ignore"):
        j = np.arange(len(words), dtype=np.uint64)
        k = words ^ (j * np.uint64(0x9E3779B97F4A7C15)) ^ np.uint64(0x5BD1E9955BD1E995)
        k ^= k >> np.uint64(33)
        k *= np.uint64(0xFF51AFD7ED558CCD)
        k ^= k >> np.uint64(33)
        k *= np.uint64(0xC4CEB9FE1A85EC53)
        k ^= k >> np.uint64(33)
        h = int(k.sum(dtype=np.uint64)) if len(words) else 0
    v = t.detach().double().flatten().cpu()
    finite = v[torch.isfinite(v)]
    return {
        "ptr": t.data_ptr(), "bytes": len(raw), "hash": h, "elements": v.numel(),
        "nan": int(torch.isnan(v).sum()), "pos_inf": int((v == float("inf")).sum()),
        "neg_inf": int((v == float("-inf")).sum()), "zero": int((v == 0).sum()),
        "min": float(finite.min()) if finite.numel() else None,
        "max": float(finite.max()) if finite.numel() else None,
        "sum": float(finite.sum()), "sum_squares": float((finite * finite).sum()),
    }


# ---- the seed's quick start ----------------------------------------------------

def quickstart():
    static_x = torch.arange(8, device="cuda", dtype=torch.float32)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        first_hidden = static_x * 2
        second_hidden = torch.relu(first_hidden - 5)
        output = second_hidden.square()
    graph.replay()
    torch.cuda.synchronize()
    # What each captured kernel left in the tensors it wrote, taken by torch
    # after replay 1 (the temporary first_hidden - 5 is recomputed).
    return g.digest(output), {
        "tensors": {
            "static_x": fingerprint(static_x),
            "after_scale": fingerprint(first_hidden),
            "after_relu": fingerprint(second_hidden),
            "output": fingerprint(output),
            "minus_five": fingerprint(first_hidden - 5),
        },
        "kernels": 4,
    }


# ---- a small transformer, eager or captured -----------------------------------

class Block(torch.nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = torch.nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.ln2 = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                       torch.nn.Linear(4 * d, d), torch.nn.Dropout(dropout))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


def model_and_data(dropout=0.0, d=128, layers=2):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block(d, 4, dropout) for _ in range(layers)],
                                torch.nn.Linear(d, 16)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    gen = torch.Generator().manual_seed(1)
    xs = [torch.randn(8, 32, d, generator=gen) for _ in range(3 + STEPS)]
    ys = [torch.randint(0, 16, (8, 32), generator=gen) for _ in range(3 + STEPS)]
    return model, opt, xs, ys


def train(model, opt, xs, ys, mode, on_step=None, before_capture=None):
    """3 warm-up steps eagerly (on a side stream, as graphs need), then STEPS
    steps: eager, or replays of one captured step fed through static inputs.
    Step k of an eager run and replay k of a graph run compute the same."""
    loss_fn = torch.nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        opt.step()
        return loss

    static_x = xs[0].cuda()
    static_y = ys[0].cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(3):
            static_x.copy_(xs[i])
            static_y.copy_(ys[i])
            step(static_x, static_y)
    torch.cuda.current_stream().wait_stream(side)
    losses = []
    if mode == "eager":
        for k in range(STEPS):
            static_x.copy_(xs[3 + k])
            static_y.copy_(ys[3 + k])
            if on_step:
                on_step(k, static_x)
            losses.append(step(static_x, static_y).detach().clone())
    else:
        if before_capture:
            before_capture()
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = step(static_x, static_y)
        for k in range(STEPS):
            static_x.copy_(xs[3 + k])
            static_y.copy_(ys[3 + k])
            if on_step:
                on_step(k, static_x)
            graph.replay()
            losses.append(static_loss.detach().clone())
    torch.cuda.synchronize()
    return losses


def transformer(mode):
    model, opt, xs, ys = model_and_data()
    losses = train(model, opt, xs, ys, mode)
    return g.digest(torch.stack(losses), *model.parameters()), {
        "mode": mode, "steps": STEPS, "warmup": 3, "losses": [float(l) for l in losses]}


# ---- torch.compile, two streams, kill ------------------------------------------

def compile_case():
    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 256).cuda()

    @torch.compile(mode="reduce-overhead")
    def f(x):
        return torch.relu(lin(x)) * 2 + 1

    x = torch.randn(64, 256, device="cuda")
    # Inference (no autograd), so cudagraph trees capture and replay.
    with torch.no_grad():
        outs = [f(x + i).clone() for i in range(8)]
    torch.cuda.synchronize()
    return g.digest(*outs), {"calls": 8}


def two_streams():
    torch.manual_seed(0)
    a = torch.randn(256, 256, device="cuda")
    w1 = torch.randn(256, 256, device="cuda")
    w2 = torch.randn(256, 256, device="cuda")
    s1 = torch.cuda.Stream()
    s2 = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    s1.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s1):
        (a @ w1).relu()  # warm-up
        with torch.cuda.graph(graph, stream=s1):
            left = (a @ w1).relu()
            s2.wait_stream(s1)
            with torch.cuda.stream(s2):
                right = (a @ w2).sigmoid()
            s1.wait_stream(s2)
            out = left + right
    torch.cuda.current_stream().wait_stream(s1)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    return g.digest(out), {"replays": 3, "streams": [s1.cuda_stream, s2.cuda_stream]}


def kill(n):
    static_x = torch.zeros(1024, device="cuda")
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        static_x.add_(1)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(graph):
        static_x.add_(1)
        y = static_x * 3
    for k in range(n):
        graph.replay()
        torch.cuda.synchronize()
        print(f"replayed {k + 1}", flush=True)
    path = os.environ.get("GATE_TRUTH")
    if path:
        with open(path, "w") as f:
            json.dump({"replays": n, "y_ptr": y.data_ptr()}, f)
    print(f"RESULT {g.digest(y)}", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


# ---- planted bugs ----------------------------------------------------------------

def graphed(mode, body, steps=STEPS, before_replay=None, setup=None):
    """Runs one warm-up call body(0) on a side stream (graphs need one; the
    eager run makes it too, so both runs have the same iterations), then
    body(k) for `steps` steps k eagerly, or captures body(0) once and replays
    it `steps` times, calling before_replay(k) first. Returns what body
    returned, per step."""
    outs = []
    if mode == "eager":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            body(0)
        torch.cuda.current_stream().wait_stream(side)
        for k in range(steps):
            outs.append(body(k).clone())
        torch.cuda.synchronize()
        return outs
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        body(0)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = body(0)
    for k in range(steps):
        if PAUSE:
            torch.cuda.synchronize()
            time.sleep(PAUSE)
        if before_replay:
            before_replay(k)
        graph.replay()
        outs.append(static_out.clone())
    torch.cuda.synchronize()
    return outs


def stale_input(mode):
    torch.manual_seed(0)
    w = torch.randn(64, 64, device="cuda")
    batches = [torch.randn(32, 64) for _ in range(STEPS)]
    static_x = torch.zeros(32, 64, device="cuda")

    def body(k):
        if mode == "eager":
            static_x.copy_(batches[k])
        return torch.tanh(static_x @ w).sum(dim=1)

    def before_replay(k):
        # The bug: the loop stops feeding the static input after step 1
        # (the new batch goes into a fresh tensor the graph never reads).
        if k < 2:
            static_x.copy_(batches[k])
        else:
            _ = batches[k].cuda()

    outs = graphed(mode, body, before_replay=before_replay)
    return g.digest(*outs), {"bug": "stale-input", "first_step": 2, "kernel": "gemm"}


def baked_scalar(mode):
    torch.manual_seed(0)
    x = torch.randn(4096, device="cuda")
    lr = {"value": 0.1}

    def body(k):
        if mode == "eager":
            lr["value"] = 0.1 * (0.5 ** k)
        return (x * lr["value"]).cumsum(0)

    def before_replay(k):
        lr["value"] = 0.1 * (0.5 ** k)  # the schedule moves on; the graph keeps 0.1

    outs = graphed(mode, body, before_replay=before_replay)
    return g.digest(*outs), {"bug": "baked-scalar", "first_step": 1, "kernel": "mul"}


def frozen_branch(mode):
    torch.manual_seed(0)
    x = torch.randn(2048, device="cuda")
    state = {"step": 0}

    def body(k):
        if mode == "eager":
            state["step"] = k
        # Python control flow: decided once, at capture, in the graph run.
        if state["step"] % 2 == 0:
            y = torch.relu(x)
        else:
            y = torch.sigmoid(x)
        return y * 3

    def before_replay(k):
        state["step"] = k

    outs = graphed(mode, body, before_replay=before_replay)
    return g.digest(*outs), {"bug": "frozen-branch", "first_step": 1}


def unwritten_padding(mode):
    torch.manual_seed(0)
    xs = [torch.randn(24, 64) for _ in range(STEPS)]
    x = torch.zeros(24, 64, device="cuda")  # the static input, fed before each step
    # Memory the caching allocator hands out again holds NaN: what an
    # unwritten buffer reads is whatever was there.
    junk = torch.full((32, 64), float("nan"), device="cuda")
    del junk
    buf = torch.empty(32, 64, device="cuda") if mode == "graph" else None

    def body(k):
        if mode == "eager":
            x.copy_(xs[k])
            out = torch.zeros(32, 64, device="cuda")  # the padding rows are zero
        else:
            out = buf  # the "optimized" graph path reuses a buffer it never zeroes
        out[:24] = x * 2
        return out.sum(dim=0)

    def before_replay(k):
        x.copy_(xs[k])

    outs = graphed(mode, body, before_replay=before_replay)
    return g.digest(*outs), {"bug": "unwritten-padding", "first_step": 0}


def dropout(mode):
    """Random numbers that differ, legitimately: the graph run draws one more
    random number than the eager run before its capture (as a program that
    samples something once, or seeds differently, does), so every replay's
    dropout masks, in nn.Dropout and inside the attention kernels, differ
    from the eager steps', and with them everything they feed."""
    model, opt, xs, ys = model_and_data(dropout=0.1, layers=1)
    losses = train(model, opt, xs, ys, mode, before_capture=lambda: torch.rand(1, device="cuda"))
    return g.digest(torch.stack(losses)), {"bug": "dropout", "losses": [float(l) for l in losses]}


def correct(mode):
    model, opt, xs, ys = model_and_data(layers=1)
    losses = train(model, opt, xs, ys, mode)
    return g.digest(torch.stack(losses), *model.parameters()), {"bug": None, "losses": [float(l) for l in losses]}


# ---- variants of the planted classes inside a training step -------------------

def train_loop(mode, model, opt, xs, ys, *, feed, after_backward=None, on_step=None, autocast=False):
    """A training step (forward, loss, backward, after_backward(k), opt.step())
    run 2 warm-up iterations on a side stream, then STEPS steps eagerly or as
    replays of one capture. feed(k, static_x, static_y) puts step k's batch in
    place before it (the bug of a variant lives there or in on_step(k), which
    runs before each eager step or replay and sets Python state). Returns the
    per-step losses and the final parameters' digest."""
    loss_fn = torch.nn.CrossEntropyLoss()
    static_x = xs[0].cuda()
    static_y = ys[0].cuda()
    state = {"x": static_x}

    def step(k):
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            out = model(state["x"])
        loss = loss_fn(out.float().flatten(0, 1), static_y.flatten())
        loss.backward()
        if after_backward:
            after_backward(k)
        opt.step()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(2):
            static_x.copy_(xs[i])
            static_y.copy_(ys[i])
            if on_step:
                on_step(0)
            step(0)
    torch.cuda.current_stream().wait_stream(side)
    losses = []
    if mode == "eager":
        for k in range(STEPS):
            feed(k, state, static_y, "eager")
            if on_step:
                on_step(k)
            losses.append(step(k).detach().clone())
    else:
        if on_step:
            on_step(0)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_loss = step(0)
        for k in range(STEPS):
            feed(k, state, static_y, "graph")
            if on_step:
                on_step(k)
            graph.replay()
            losses.append(static_loss.detach().clone())
    torch.cuda.synchronize()
    return g.digest(torch.stack(losses), *model.parameters()), [float(l) for l in losses]


def variant_model(d=128, layers=1):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[Block(d, 4, 0.0) for _ in range(layers)], torch.nn.Linear(d, 16)).cuda()
    gen = torch.Generator().manual_seed(1)
    xs = [torch.randn(8, 32, d, generator=gen) for _ in range(2 + STEPS)]
    ys = [torch.randint(0, 16, (8, 32), generator=gen) for _ in range(2 + STEPS)]
    return model, xs, ys


def stale_batch_train(mode):
    """From step 1 on, the graph loop binds the new batch to a fresh tensor
    (x = batch.cuda()) instead of copying it into the captured one: every
    replay from 1 reads step 0's batch. The eager loop copies each step."""
    model, xs, ys = variant_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)

    def feed(k, state, static_y, run):
        static_y.copy_(ys[2 + k])
        if run == "graph" and k >= 1:
            state["x"] = xs[2 + k].cuda()  # the bug: the graph still reads the old tensor
        else:
            state["x"].copy_(xs[2 + k])

    digest, losses = train_loop(mode, model, opt, xs, ys, feed=feed)
    return digest, {"bug": "stale-batch-train", "first_step": 1, "losses": losses}


def baked_lr_sgd(mode):
    """SGD(foreach) with a Python-float learning rate halved every step by a
    hand-written schedule: eagerly each step's rate reaches the update
    kernel's alpha; the graph keeps the rate it was captured with (0.1)."""
    model, xs, ys = variant_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, foreach=True)

    def feed(k, state, static_y, run):
        state["x"].copy_(xs[2 + k])
        static_y.copy_(ys[2 + k])

    def on_step(k):
        for group in opt.param_groups:
            group["lr"] = 0.1 * (0.5 ** k)

    digest, losses = train_loop(mode, model, opt, xs, ys, feed=feed, on_step=on_step)
    return digest, {"bug": "baked-lr-sgd", "first_step": 1, "losses": losses}


def clip_branch(mode):
    """Gradient clipping turned on by Python from step 1 (a warm-up rule):
    eagerly steps 1.. clip; the graph was captured at step 0, without it."""
    model, xs, ys = variant_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    state = {"step": 0}

    def feed(k, st, static_y, run):
        st["x"].copy_(xs[2 + k])
        static_y.copy_(ys[2 + k])

    def on_step(k):
        state["step"] = k

    def after_backward(_k):
        if state["step"] >= 1:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.01, foreach=True)

    digest, losses = train_loop(mode, model, opt, xs, ys, feed=feed, on_step=on_step,
                                after_backward=after_backward)
    return digest, {"bug": "clip-branch", "first_step": 1, "losses": losses}


def unwritten_bf16(mode):
    """bfloat16 features padded from 24 to 32 rows: eagerly into
    torch.zeros; the graph path into torch.empty, whose padding rows hold
    what an earlier activation of the same step left in that memory."""
    torch.manual_seed(0)
    w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    xs = [torch.randn(24, 64).bfloat16() for _ in range(STEPS)]
    x = torch.zeros(24, 64, device="cuda", dtype=torch.bfloat16)

    def body(k):
        if mode == "eager":
            x.copy_(xs[k])
        hidden = torch.relu(x @ w) + 1.0
        feats = hidden * 0.5
        # Another use of the activation, 32 x 64 like `out`: freed below, its
        # block is the one `out` gets, rows 24-31 holding hidden[:8] (>= 1).
        wide = torch.cat([hidden, hidden[:8]])
        norm = wide.float().square().mean()
        del hidden, wide
        if mode == "eager":
            out = torch.zeros(32, 64, device="cuda", dtype=torch.bfloat16)
        else:
            out = torch.empty(32, 64, device="cuda", dtype=torch.bfloat16)
        out[:24] = feats
        return out.float().sum(dim=0) + norm

    def before_replay(k):
        x.copy_(xs[k])

    outs = graphed(mode, body, before_replay=before_replay)
    return g.digest(*outs), {"bug": "unwritten-bf16", "first_step": 0}


def baked_index(mode):
    """A per-step row of a table picked by a Python int: eagerly row k at
    step k; the graph keeps the row it was captured with (row 0), so the
    multiplication reads another place of the same allocation."""
    torch.manual_seed(0)
    table = torch.randn(8, 1024, device="cuda")
    x = torch.randn(1024, device="cuda")
    state = {"step": 0}

    def body(k):
        if mode == "eager":
            state["step"] = k
        return (x * table[state["step"]]).cumsum(0)

    def before_replay(k):
        state["step"] = k  # the program moves on; the graph keeps row 0

    outs = graphed(mode, body, before_replay=before_replay)
    return g.digest(*outs), {"bug": "baked-index", "first_step": 1}


def correct_autocast(mode):
    """A correct graphed training step under bfloat16 autocast (cuBLAS
    bf16 GEMMs, fused attention, capturable Adam): no divergence."""
    model, xs, ys = variant_model(layers=2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)

    def feed(k, state, static_y, run):
        state["x"].copy_(xs[2 + k])
        static_y.copy_(ys[2 + k])

    digest, losses = train_loop(mode, model, opt, xs, ys, feed=feed, autocast=True)
    return digest, {"bug": None, "losses": losses}


# ---- record: a captured program's bytes in every replay ----------------------

def record():
    static_x = torch.randn(4096, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as torch's graph docs do it
        y = static_x * 2 + 1
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = static_x * 2 + 1
    replays = []
    for _ in range(3):
        static_x.copy_(torch.randn(4096, device="cuda"))
        graph.replay()
        torch.cuda.synchronize()
        # torch's own copy of what the replay left in y
        replays.append(y.clone().cpu().numpy().tobytes().hex())
    return g.digest(y), {"ptr": y.data_ptr(), "bytes": y.numel() * 4, "replays": replays}


# ---- explicit probes ------------------------------------------------------------

def probe_quickstart():
    """The quick start with tcgd.probe: two named tensors in a capture."""
    import tcgd
    static_x = torch.arange(8, device="cuda", dtype=torch.float32)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        first_hidden = tcgd.probe(static_x * 2, "after_scale")
        second_hidden = tcgd.probe(torch.relu(first_hidden - 5), "after_relu")
        # The seed's CheckAction: compared by the recorder in every replay.
        tcgd.check(second_hidden, [0, 0, 0, 1, 3, 5, 7, 9], "after_relu/expected")
        output = second_hidden.square()
    graph.replay()
    graph.replay()
    torch.cuda.synchronize()
    return g.digest(output), {"values": {"after_scale": first_hidden.tolist(), "after_relu": second_hidden.tolist()},
                              "agent": tcgd.agent_loaded()}


def probe_grads(mode):
    """watch_grad on every weight and on the hidden activations of a 3-layer
    MLP; the order the hooks fire (autograd's backward order) and every
    gradient's bytes, per step (eager) or per replay (graph)."""
    import tcgd
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(),
                                torch.nn.Linear(32, 4)).cuda()
    fired = []

    def order_hook(name):
        def hook(grad):
            fired.append(name)
        return hook

    names = {}
    for pname, p in model.named_parameters():
        if pname.endswith("weight"):
            names[pname] = p
            tcgd.watch_grad(p, f"grad/{pname}", non_contiguous="copy")
            p.register_hook(order_hook(f"grad/{pname}"))
    static_x = torch.randn(8, 16, device="cuda")
    static_y = torch.randn(8, 4, device="cuda")
    xs = [torch.randn(8, 16, device="cuda") for _ in range(3)]

    def step():
        h = model[1](model[0](static_x))
        h.register_hook(order_hook("grad/hidden1"))
        tcgd.watch_grad(h, "grad/hidden1", non_contiguous="copy")
        out = model[4](model[3](model[2](h)))
        loss = torch.nn.functional.mse_loss(out, static_y)
        loss.backward()
        return loss

    grads = []
    if mode == "graph":
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                model.zero_grad(set_to_none=True)
                step()
        torch.cuda.current_stream().wait_stream(side)
        model.zero_grad(set_to_none=True)
        fired.clear()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            loss = step()
        order = list(fired)
        for x in xs:
            static_x.copy_(x)
            graph.replay()
            torch.cuda.synchronize()
            grads.append({n: p.grad.detach().cpu().numpy().tobytes().hex() for n, p in names.items()})
    else:
        for x in xs:
            model.zero_grad(set_to_none=True)
            fired.clear()
            static_x.copy_(x)
            loss = step()
            torch.cuda.synchronize()
            order = list(fired)
            grads.append({n: p.grad.detach().cpu().numpy().tobytes().hex() for n, p in names.items()})
    return g.digest(loss), {"order": order, "grads": grads, "steps": len(xs)}


CASES = {
    "probe-quickstart": lambda: probe_quickstart(),
    "probe-grads": lambda: probe_grads(MODE),
    "quickstart": lambda: quickstart(),
    "record": lambda: record(),
    "transformer": lambda: transformer(MODE),
    "compile": lambda: compile_case(),
    "two-streams": lambda: two_streams(),
    "stale-input": lambda: stale_input(MODE),
    "baked-scalar": lambda: baked_scalar(MODE),
    "frozen-branch": lambda: frozen_branch(MODE),
    "unwritten-padding": lambda: unwritten_padding(MODE),
    "dropout": lambda: dropout(MODE),
    "correct": lambda: correct(MODE),
    "stale-batch-train": lambda: stale_batch_train(MODE),
    "baked-lr-sgd": lambda: baked_lr_sgd(MODE),
    "clip-branch": lambda: clip_branch(MODE),
    "unwritten-bf16": lambda: unwritten_bf16(MODE),
    "correct-autocast": lambda: correct_autocast(MODE),
    "baked-index": lambda: baked_index(MODE),
}

if __name__ == "__main__":
    if CASE == "kill":
        kill(int(MODE) if MODE.isdigit() else 5)
    digest, facts = CASES[CASE]()
    g.finish(digest, case=CASE, **facts)
