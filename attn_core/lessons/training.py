"""The training lab: does a model really stop learning without √d_k?

A toy task that only attention can solve — associative recall — trained twice
from the *same* initial weights and the *same* batches: once with the scores
divided by √d_k, once without. Everything else is identical, so any difference
in the curves is the scaling's doing.

Task. Each example is a little dictionary: `n_pairs` (key, value) pairs of
symbols (keys distinct, values drawn freely from `n_symbols`), then a query that
repeats one of the keys. The answer is that key's value. The query alone says
nothing about the answer (values are drawn independently of keys), so a model
that cannot look at the pairs is stuck at chance, cross-entropy ln(n_symbols).

Model. One attention layer, of `heads` heads, over fixed random symbol embeddings:

    x_pair  = LayerNorm(E_key[key] + E_val[value])      # (B, n_pairs, d_model)
    x_query = LayerNorm(E_key[query])                   # (B, 1, d_model)
    q, k, v = x_query W_q, x_pair W_k, x_pair W_v       # (B, 1, h·d_k), (B, n_pairs, h·d_k), …
    split q, k into h heads of d_k, v into h heads of d_model / h
    logits  = concat_h(attention(q_h, k_h, v_h).output) W_o   # (B, 1, n_symbols)

LayerNorm gives every input component unit variance; W_q and W_k are drawn
N(0, init_std² / d_model), so each component of q and k starts with standard
deviation init_std (1 by default: exactly the derivation's premise). The
attention itself is `attn_core.attention`, the explicit path the other pages
draw, so the same code that is explained is the code being trained. With one
head (the default) it is the single-head model of the lesson's story; with
h = d_model / d_k heads it is the standard multi-head split, and because W_q is
then (d_model, d_model) whatever h is, every head count starts from the same
weights: only how they are cut into heads differs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
import torch._dynamo  # loaded at import on purpose: see the note below
import torch.nn.functional as F

from ..attention import attention
from ..softmax import entropy, softmax_jacobian

# torch.optim imports torch._dynamo (and sympy with it: ~800 modules, ~120k objects) the first
# time an optimizer is built. Importing it here instead puts those long-lived objects in the
# import-time heap that ui/_warm.py freezes out of the garbage collector; loaded lazily by the
# first training run, they stayed in it, and Streamlit's full collection after every rerun of
# every page re-scanned them (about +50 ms a rerun on a 2-core machine).

OPTIMIZERS = ("sgd", "adam")
# Learning rates that train the scaled model well on this toy in a few hundred steps.
DEFAULT_LR = {"sgd": 0.5, "adam": 0.01}
# The Training lab's defaults, in the order of its settings, and the saturated start under
# which the unscaled model fails (bench/training_answer.py measures both for the page).
LAB_DEFAULTS = dict(d_k=64, optimizer="sgd", lr=DEFAULT_LR["sgd"], steps=400, init_std=1.0, seed=0)
FAILURE = dict(d_k=256, init_std=4.0)
ANSWER_SETTINGS = {"default": LAB_DEFAULTS, "failure": dict(LAB_DEFAULTS, **FAILURE)}
SATURATED = 0.99  # a row whose largest weight exceeds this counts as saturated
# A loss this many times chance has diverged: no run that is learning gets near it, and
# stopping here keeps 1e30-sized numbers (the step before a NaN) off the charts.
DIVERGED = 100.0
N_PROBE = 256  # fixed held-out examples measured before and after training
# The task and model the page trains (the defaults of every function below).
N_PAIRS = 16  # key/value pairs per example: the keys each query chooses among
N_SYMBOLS = 32  # symbols keys and values are drawn from
D_MODEL = 64  # width of the embeddings and of the value path


@dataclass(frozen=True, kw_only=True)
class _RunSettings:
    """What every run of a lab's comparison shares: optimizer, schedule, start, device.

    Frozen and hashable: the key under which a server keeps finished runs. (It lives here,
    not in the page, because a page script defines its classes anew on every rerun, and a
    dataclass equals only instances of its own class.)
    """

    optimizer: str
    lr: float
    steps: int
    init_std: float
    seed: int
    device: str = "cpu"

    def kw(self) -> dict:
        """The training functions' keyword arguments: every field but the device."""
        out = asdict(self)
        del out["device"]
        return out


@dataclass(frozen=True, kw_only=True)
class PairSettings(_RunSettings):
    """One scaled/unscaled pair of runs: train_pair's settings (kw() includes d_k)."""

    d_k: int


@dataclass(frozen=True, kw_only=True)
class SweepSettings(_RunSettings):
    """One head_sweep: the scaled model at `d_model` cut into heads (kw() without d_model)."""

    d_model: int

    def kw(self) -> dict:
        out = super().kw()
        del out["d_model"]
        return out


@dataclass
class RetrievalBatch:
    keys: torch.Tensor  # (B, n_pairs) long, distinct within a row
    values: torch.Tensor  # (B, n_pairs) long
    query: torch.Tensor  # (B,) long, one of the row's keys
    target: torch.Tensor  # (B,) long, the value stored under the query key
    position: torch.Tensor  # (B,) long, where the query key sits among the pairs


def retrieval_batch(
    batch: int, n_pairs: int, n_symbols: int, *, generator: torch.Generator
) -> RetrievalBatch:
    """Draw `batch` associative-recall examples (on the CPU, from `generator`)."""
    if not 1 <= n_pairs <= n_symbols:
        raise ValueError(f"need 1 <= n_pairs <= n_symbols; got {n_pairs}, {n_symbols}")
    # distinct keys per row: the first n_pairs of a random permutation of the symbols
    keys = torch.rand(batch, n_symbols, generator=generator).argsort(-1)[:, :n_pairs]
    values = torch.randint(n_symbols, (batch, n_pairs), generator=generator)
    position = torch.randint(n_pairs, (batch,), generator=generator)
    rows = torch.arange(batch)
    return RetrievalBatch(keys, values, keys[rows, position], values[rows, position], position)


@dataclass
class TrainingRun:
    """One run's history: one float per recorded step, plus before/after snapshots."""

    d_k: int
    scaled: bool
    optimizer: str
    lr: float
    steps: int  # steps asked for
    init_std: float
    seed: int
    n_pairs: int
    n_symbols: int
    chance: float  # ln(n_symbols): the loss of a model that ignores the pairs
    heads: int = 1  # attention heads, each of width d_k
    d_model: int = D_MODEL
    loss: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    entropy: list[float] = field(default_factory=list)  # mean entropy of the attention rows, nats
    max_weight: list[float] = field(default_factory=list)  # mean largest weight per row
    saturated: list[float] = field(default_factory=list)  # share of rows with max > SATURATED
    jacobian_norm: list[float] = field(default_factory=list)  # mean ‖∂softmax/∂logits‖_F per row
    qk_grad_norm: list[float] = field(default_factory=list)  # ‖(∂L/∂W_q, ∂L/∂W_k)‖
    # The fixed probe examples (N_PROBE rows), before training and at the end. Shapes are
    # for one head; with h > 1 heads a head axis follows the first: (N_PROBE, h, n_pairs).
    probe_start: torch.Tensor | None = None  # (N_PROBE, n_pairs) attention rows
    probe_end: torch.Tensor | None = None  # (N_PROBE, n_pairs)
    probe_position: torch.Tensor | None = None  # (N_PROBE,) index of the matching key
    probe_jacobian_start: torch.Tensor | None = None  # (N_PROBE,) per-row Jacobian norms
    probe_jacobian_end: torch.Tensor | None = None  # (N_PROBE,)
    # raw scores q·k (before any division) of the probe rows at initialisation: the same for
    # the scaled and the unscaled run, which share their weights at step 0
    probe_scores_start: torch.Tensor | None = None  # (N_PROBE, n_pairs)
    # None: ran to the end; "nan": the loss became NaN/inf (or > DIVERGED × chance) and the
    # run stopped before recording it; "callback": on_step (or the page's Stop) ended it
    stopped: str | None = None
    stopped_at: int | None = None  # the step at which it stopped

    @property
    def done(self) -> int:
        """Steps recorded so far."""
        return len(self.loss)

    @property
    def finished(self) -> bool:
        return self.stopped is None and self.done == self.steps

    def tail_loss(self, n: int = 50) -> float:
        """Mean loss over the last n recorded steps (the issue's 'final-50-step loss')."""
        tail = self.loss[-n:]
        return sum(tail) / len(tail) if tail else float("nan")

    def tail_accuracy(self, n: int = 50) -> float:
        """Mean batch accuracy over the last n recorded steps."""
        tail = self.accuracy[-n:]
        return sum(tail) / len(tail) if tail else float("nan")

    def summary(self) -> dict:
        """The figures the Training lab quotes about a finished run, as plain numbers."""
        below = [-x for x in self.loss]  # the first step whose loss is under 90 % of chance
        return dict(
            steps=self.done,
            chance=self.chance,
            tail_accuracy=self.tail_accuracy(),
            tail_loss=self.tail_loss(),
            saturated_start=self.saturated[0] if self.saturated else float("nan"),
            first_99=next((i for i, x in enumerate(self.accuracy) if x >= 0.99), None),
            left_chance=next((i for i, x in enumerate(below) if x >= -0.9 * self.chance), None),
        )


def top_two_gap(scores: torch.Tensor) -> torch.Tensor:
    """How far each row's best score leads its runner-up: (..., n) -> (...), n >= 2."""
    top2 = scores.topk(2, dim=-1).values  # (..., 2), largest first
    return top2[..., 0] - top2[..., 1]


def found_share(w, position) -> float:
    """Share of rows whose largest weight sits on the matching key: w (N, n_pairs) attention
    rows, position (N,) the matching key's index; nan when there are no rows."""
    w = torch.as_tensor(w).detach().float().cpu()
    pos = torch.as_tensor(position).detach().long().cpu()
    if len(pos) == 0:
        return float("nan")
    ok = torch.isfinite(w).all(-1)  # rows of a diverged run are NaN: they found nothing
    return float(((w.argmax(-1) == pos) & ok).float().mean())


def _row_jacobian_norm(w: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of softmax's Jacobian for each row: (..., n) -> (...)."""
    J = softmax_jacobian(w)  # (..., n, n) = diag(w) - w wᵀ
    return J.flatten(-2).norm(dim=-1)


class _RecallModel:
    """The one-layer model as plain tensors, so every step is explicit."""

    def __init__(
        self, d_k, n_symbols, d_model, init_std, seed, device, heads=1, dtype=torch.float32
    ):
        g = torch.Generator().manual_seed(seed)  # weights drawn on the CPU: same on every device
        sd = init_std / math.sqrt(d_model)  # LayerNorm-ed inputs × this → q, k with std init_std

        def draw(*shape, std):
            w = torch.randn(*shape, generator=g, dtype=torch.float64) * std
            return w.to(device=device, dtype=dtype)

        # The data: fixed random symbol embeddings (not trained).
        self.E_key = draw(n_symbols, d_model, std=1.0)
        self.E_val = draw(n_symbols, d_model, std=1.0)
        # every head's q and k side by side: one matrix per role, heads carved by reshaping
        self.W_q = draw(d_model, heads * d_k, std=sd).requires_grad_()
        self.W_k = draw(d_model, heads * d_k, std=sd).requires_grad_()
        self.W_v = draw(d_model, d_model, std=1 / math.sqrt(d_model)).requires_grad_()
        self.W_o = draw(d_model, n_symbols, std=1 / math.sqrt(d_model)).requires_grad_()
        self.d_model, self.d_k, self.h = d_model, d_k, heads
        self.device = device

    def params(self) -> list[torch.Tensor]:
        return [self.W_q, self.W_k, self.W_v, self.W_o]

    def _split(self, x: torch.Tensor, width: int) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.h, width).transpose(1, 2)  # (B, h, T, width)

    def qkv(self, b: RetrievalBatch):
        """Per-head q (B, h, 1, d_k), k (B, h, n_pairs, d_k), v (B, h, n_pairs, d_model/h)."""
        dev = self.device
        keys, values, query = b.keys.to(dev), b.values.to(dev), b.query.to(dev)
        x_pair = F.layer_norm(self.E_key[keys] + self.E_val[values], (self.d_model,))
        x_query = F.layer_norm(self.E_key[query], (self.d_model,))[:, None, :]  # (B, 1, d_model)
        q = self._split(x_query @ self.W_q, self.d_k)  # (B, h, 1, d_k)
        k = self._split(x_pair @ self.W_k, self.d_k)  # (B, h, n_pairs, d_k)
        v = self._split(x_pair @ self.W_v, self.d_model // self.h)  # (B, h, n_pairs, d_v)
        return q, k, v

    def forward(self, b: RetrievalBatch, scaled: bool):
        """(logits (B, n_symbols), weights (B, h, n_pairs), raw scores q·k (B, h, n_pairs))."""
        q, k, v = self.qkv(b)
        # scale=None divides by √d_k, the width of one head; 1.0 leaves the raw q·k
        r = attention(q, k, v, scale=None if scaled else 1.0)  # weights (B, h, 1, n_pairs)
        B = q.shape[0]
        concat = r.output.transpose(1, 2).reshape(B, 1, self.d_model)  # (B, 1, d_model)
        logits = (concat @ self.W_o)[:, 0, :]  # (B, n_symbols)
        return logits, r.weights[:, :, 0, :], r.raw_scores[:, :, 0, :]


def _check_args(d_k, steps, optimizer, lr, n_pairs, n_symbols, d_model, batch, init_std, heads):
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; valid: {', '.join(OPTIMIZERS)}")
    for name, val in (("d_k", d_k), ("d_model", d_model), ("batch", batch), ("heads", heads)):
        if int(val) != val or val < 1:
            raise ValueError(f"{name} must be a positive integer; got {val}")
    if d_model % heads:
        raise ValueError(f"heads={heads} must divide d_model={d_model} (each head's value width)")
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be a whole number >= 0; got {steps}")
    if not 1 <= n_pairs <= n_symbols:
        raise ValueError(f"need 1 <= n_pairs <= n_symbols; got {n_pairs}, {n_symbols}")
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive finite number; got {lr}")
    if not (math.isfinite(init_std) and init_std > 0):
        raise ValueError(f"init_std must be a positive finite number; got {init_std}")


class RetrievalTrainer:
    """One run, advanced a step at a time (so two runs can train in lockstep).

    The same `seed` gives the same initial weights, the same batches and the
    same probe set whether `scaled` is True or False, so two trainers that
    differ only in `scaled` differ in the √d_k alone.
    """

    def __init__(
        self,
        d_k: int,
        scaled: bool,
        *,
        steps: int = 400,
        optimizer: str = "sgd",
        lr: float | None = None,
        n_pairs: int = N_PAIRS,
        n_symbols: int = N_SYMBOLS,
        d_model: int = D_MODEL,
        batch: int = 128,
        init_std: float | None = None,
        seed: int = 0,
        device=None,
        heads: int = 1,
    ):
        lr = DEFAULT_LR.get(optimizer, 0.0) if lr is None else float(lr)
        init_std = 1.0 if init_std is None else float(init_std)
        _check_args(d_k, steps, optimizer, lr, n_pairs, n_symbols, d_model, batch, init_std, heads)
        self.device = torch.device("cpu") if device is None else torch.device(device)
        self.scaled, self.batch = scaled, batch
        self.model = _RecallModel(d_k, n_symbols, d_model, init_std, seed, self.device, heads)
        self.data = torch.Generator().manual_seed(seed + 1)  # the training batches
        self.probe = retrieval_batch(
            N_PROBE, n_pairs, n_symbols, generator=torch.Generator().manual_seed(seed + 2)
        )
        opt_cls = torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam
        self.opt = opt_cls(self.model.params(), lr=lr)
        self.run = TrainingRun(
            d_k=d_k, scaled=scaled, optimizer=optimizer, lr=lr, steps=steps, init_std=init_std,
            seed=seed, n_pairs=n_pairs, n_symbols=n_symbols, chance=math.log(n_symbols),
            heads=heads, d_model=d_model, probe_position=self.probe.position.clone(),
        )  # fmt: skip
        start = self._snapshot()
        self.run.probe_start, self.run.probe_jacobian_start, self.run.probe_scores_start = start

    def _snapshot(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The probe rows' weights, their Jacobian norms and their raw scores q·k."""
        with torch.no_grad():
            _, w, raw = self.model.forward(self.probe, self.scaled)  # (N_PROBE, h, n_pairs)
            if self.model.h == 1:
                w, raw = w[:, 0], raw[:, 0]  # one head: (N_PROBE, n_pairs), as the figures draw
            w = w.float()
            # after a divergence the weights may hold inf/NaN: those rows become all-NaN
            # (drawn blank), never a row of garbage that looks like a real answer
            w = w.masked_fill(~torch.isfinite(w).all(-1, keepdim=True), float("nan"))
            return w.cpu(), _row_jacobian_norm(w).cpu(), raw.float().cpu()

    @property
    def active(self) -> bool:
        """True while there are steps left and nothing has stopped the run."""
        return self.run.stopped is None and self.run.done < self.run.steps

    def step(self) -> bool:
        """One SGD/Adam step on a fresh batch; record its numbers. False once it cannot go on.

        A loss that is not finite (or above DIVERGED × chance) stops the run
        (run.stopped = "nan") and is not recorded, so no curve ever holds a NaN.
        """
        if not self.active:
            return False
        m, run = self.model, self.run
        b = retrieval_batch(self.batch, run.n_pairs, run.n_symbols, generator=self.data)
        logits, w, _ = m.forward(b, self.scaled)  # (B, n_symbols), (B, h, n_pairs)
        target = b.target.to(self.device)
        loss = F.cross_entropy(logits, target)
        lv = float(loss.detach())  # NaN, inf, or a runaway loss: stop before it reaches a curve
        if not math.isfinite(lv) or lv > DIVERGED * run.chance:
            self.stop("nan")
            return False
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        with torch.no_grad():
            wd = w.detach().flatten(0, 1)  # (B·h, n_pairs): every head's row counts as a row
            top = wd.amax(-1)  # (B·h,) each row's largest weight
            stats = torch.stack(
                [
                    loss.detach(),
                    (logits.argmax(-1) == target).float().mean(),
                    entropy(wd).mean(),
                    top.mean(),
                    (top > SATURATED).float().mean(),
                    _row_jacobian_norm(wd).mean(),
                    torch.sqrt(m.W_q.grad.square().sum() + m.W_k.grad.square().sum()),
                ]
            ).tolist()  # one device-to-host copy per step
        if not all(math.isfinite(x) for x in stats):
            self.stop("nan")  # a finite loss whose gradient overflowed: the next step is NaN
            return False
        for name, x in zip(_CURVES, stats, strict=True):
            getattr(run, name).append(x)
        self.opt.step()
        if not self.active:
            self.finish()
        return self.active

    def stop(self, reason: str) -> None:
        if self.run.stopped is None and self.run.probe_end is None:
            self.run.stopped, self.run.stopped_at = reason, self.run.done
            self.finish()

    def finish(self) -> TrainingRun:
        """Take the after-training snapshot of the probe set (once)."""
        if self.run.probe_end is None:
            self.run.probe_end, self.run.probe_jacobian_end, _ = self._snapshot()
        return self.run


_CURVES = (
    "loss",
    "accuracy",
    "entropy",
    "max_weight",
    "saturated",
    "jacobian_norm",
    "qk_grad_norm",
)


def train_retrieval(
    d_k: int,
    scaled: bool,
    *,
    on_step: Callable[[int, TrainingRun], bool | None] | None = None,
    **kw,
) -> TrainingRun:
    """Train one run to the end (or to a NaN loss, or until `on_step` returns True).

    `on_step(step, run)` is called after every step with the number of steps
    done; returning True stops the run there (run.stopped = "callback").
    Deterministic: the same arguments give the same numbers. `kw` are RetrievalTrainer's
    settings (steps, optimizer, lr, n_pairs, n_symbols, d_model, batch, init_std, seed,
    device, heads), with its defaults.
    """
    t = RetrievalTrainer(d_k, scaled, **kw)
    while t.step():
        if on_step is not None and on_step(t.run.done, t.run):
            t.stop("callback")
    if t.run.done and on_step is not None and t.run.stopped is None:
        on_step(t.run.done, t.run)  # the last step, so a progress bar reaches 100 %
    return t.finish()


def train_pair(
    d_k: int,
    *,
    on_step: Callable[[int, TrainingRun, TrainingRun], bool | None] | None = None,
    **kw,
) -> tuple[TrainingRun, TrainingRun]:
    """The scaled and the unscaled run in lockstep, from the same weights and batches.

    `on_step(step, scaled_run, unscaled_run)` after every joint step; return
    True to stop both. A run whose loss turns NaN stops alone; the other goes on.
    """
    a, b = RetrievalTrainer(d_k, True, **kw), RetrievalTrainer(d_k, False, **kw)
    step = 0
    while a.active or b.active:
        a.step()
        b.step()
        step += 1
        if on_step is not None and on_step(step, a.run, b.run):
            a.stop("callback")
            b.stop("callback")
    return a.finish(), b.finish()


def head_sweep(
    d_model: int,
    d_ks: tuple[int, ...] | list[int],
    *,
    on_step: Callable[[int, int, TrainingRun], bool | None] | None = None,
    **kw,
) -> list[TrainingRun]:
    """The scaled model at a fixed d_model, cut into h = d_model / d_k heads, one run per d_k.

    Same steps, learning rate, seed (so the same initial weights and batches) for every
    head count. `on_step(i, step, run)` after every step of run i; True stops the sweep
    (the run in progress stops there, the ones after it are not started).
    """
    for d_k in d_ks:
        if int(d_k) != d_k or d_k < 1 or d_model % d_k:
            raise ValueError(f"every d_k must divide d_model={d_model}; got {d_k}")
    runs: list[TrainingRun] = []
    for i, d_k in enumerate(d_ks):
        cb = None if on_step is None else (lambda step, run, i=i: on_step(i, step, run))
        run = train_retrieval(d_k, True, d_model=d_model, heads=d_model // d_k, on_step=cb, **kw)
        runs.append(run)
        if run.stopped == "callback":
            break
    return runs
