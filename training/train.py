"""Train the NeuROK model on the corpus; the shipped weights come from this script.

    python -m training.train CORPUS OUT [--steps 20000] [--batch 8] [--seed 0] [--device auto]
                                        [--displacement] [--hours H] [--until STEP] [--kl-weight 0.01]
                                        [--kl-warmup STEPS] [--pairs by-change] [--draw-workers N] [--config JSON]
                                        [--init WEIGHTS] [--learning-rate 3e-4] [--compile] [--inertia-weight W]
                                        [--inertia-radius 9]
    torchrun --nproc-per-node N -m training.train CORPUS OUT ...     (data-parallel on N GPUs)

Loss per pair of frames (``examples.py``): the squared error of the decoded points in units of 1 %
of the bounding-box diagonal, plus 0.01 KL(q(z | phi, M0) || N(mu_cond(M0), I)) summed over the
latent; each pair's frame b drawn uniformly or, with --pairs by-change, in proportion to its shape
change (``examples.draw_pair``); with --inertia-weight W, plus W times the inertia term (``inertia.py``:
the share of a direction's rest inertia lost at points of the latent ball the solver explores,
computed on the batch's first examples). With --kl-warmup the KL weight ramps linearly from 0 to its value over that many steps
(KL annealing, Bowman et al. 2016): trained from scratch at weight 1.0 the posterior collapsed onto
the prior (held-out KL 0.06-7 nats over 3,000 steps, held-out vertex error 5.3 % of the diagonal at
step 2,975 against 5.9 % at step 25; the shipped run, weight 0.01 on the previous corpus, had 3.8 %
at step 3,000), where the same weight reached by fine-tuning trained weights kept 3.5 nats and
2.8 %. Resumable: OUT/checkpoint.pt (model, optimizer, step) is rewritten every --save-every steps
and the same command continues from it; example i of step s and its posterior noise are drawn from
generators seeded by (seed, step, i), so a resumed run repeats an uninterrupted one exactly.
OUT/log.jsonl gets the losses; OUT/neurok.pt is the model alone, written at the end (what the add-on ships);
OUT/manifest.json the run's settings and the corpus shards it trains on, by name and size: a resume
on other shards (added, missing or rewritten) is refused, since its batches would be other ones.
--init starts from a model file's weights (a fine-tune: its config, a fresh optimizer).

Launched by ``torchrun`` (torch's own launcher), N processes train data-parallel
(DistributedDataParallel: NCCL on GPUs, one each, gloo on the CPU): each computes 1/N of every
--batch (the same examples and noise as one process would, whatever N) and their gradients are
averaged, so the steps, the schedule and the checkpoint are those of one process, and a checkpoint
resumes under any number of processes. Process 0 logs, checks the held-out set and saves.

Drawing a batch (sampling, augmenting and skinning each example) is Python on one CPU core, about
6 ms an example, while a step of the network on an H200 takes 35-41 ms at any batch from 16 to 256:
there, in-process drawing at 14 ms an example held training to 61-70 examples/s. ``--draw-workers N`` draws the coming
batches in N processes while the network steps (the same batches: each is seeded by its step); with
15 on the H200's 16 cores, 734 examples/s at batch 64 (held-out checks and checkpoints included).
``--compile`` runs the loss through torch.compile (inductor's fused kernels; on the CPU it needs a C++
compiler): the same losses to rounding, and a step of batch 16 on one CPU thread, drawing included,
in 0.27 s instead of 0.33 after a compile of about a minute (kept in inductor's cache for the next).
"""

import argparse
import collections
import contextlib
import dataclasses
import json
import math
import os
import time
from pathlib import Path

import numpy as np
import torch

from neurok_blender.core.checkpoint import read_checkpoint, resolve_device, save_checkpoint
from neurok_blender.core.model import ModelConfig, NeuROKModel
from neurok_blender.core.skinning import Skinning
from training.corpus.shards import read_shard
from training.examples import AUGMENTATION, PAIRS, collate, make_example, prepare
from training.inertia import RADIUS as INERTIA_RADIUS
from training.inertia import inertia_loss
from training.parent_watch import spawned_pool

UNIT = 0.01  # the reconstruction error is measured in 1 % of the bounding-box diagonal
KL_WEIGHT = 0.01
VALIDATION_EXAMPLES = 64
MAX_PENETRATION = 0.02  # m below the ground


def usable(sequence) -> bool:
    """Leave out runs whose surface ended up deep in the ground: sand that flew apart carries its
    surface vertices anywhere, and that is no deformation to learn."""
    return sequence.checks.get("finite", True) and sequence.checks.get("penetration", 0.0) <= MAX_PENETRATION


def load_corpus(corpus: Path, split: str) -> list:
    items, skipped = [], 0
    for path in sorted(corpus.glob(f"*-{split}-*.npz")):
        sequences = read_shard(path)
        items += [prepare(s) for s in sequences if usable(s)]
        skipped += sum(not usable(s) for s in sequences)
    if not items:
        raise ValueError(f"no {split} sequences in {corpus}")
    if skipped:
        print(f"{split}: left out {skipped} sequences that failed their checks", flush=True)
    return items


def validation_batch(model: NeuROKModel, items, seed: int, device) -> dict:
    """The batch a run of ``seed`` checks itself on (its log's held-out figures): VALIDATION_EXAMPLES
    pairs from the generator (seed + 1, step 0), unaugmented."""
    return batch_tensors(model, draw_batch(items, seed + 1, 0, range(VALIDATION_EXAMPLES), model.config,
                                           augment=False), device)


def batch_tensors(model: NeuROKModel, batch: dict, device) -> dict:
    t = {k: torch.as_tensor(v, device=device) for k, v in batch.items()}
    f = {k: v.float() for k, v in t.items() if v.is_floating_point()}
    return {"features": model.point_features(f["points"], f["normals"], f["offsets"]),
            "query_features": model.point_features(f["queries"], f["query_normals"], f["query_offsets"]),
            "queries": f["queries"], "deformation": f["deformation"], "evaluation": f["evaluation"],
            "targets": f["targets"], "skin": Skinning(t["skin_index"], t["skin_weight"].float())}


def losses(model: NeuROKModel, t: dict, noise: torch.Tensor | None = None, kl_weight: float = KL_WEIGHT,
           inertia_weight: float = 0.0, generator: torch.Generator | None = None,
           inertia_radius: float = INERTIA_RADIUS) -> dict:
    """The loss terms of a batch; ``noise`` (standard normal, the latent's shape) samples the posterior,
    None takes its mean. With ``inertia_weight``, the inertia term (``inertia.py``) out to
    ``inertia_radius``, drawn by ``generator``."""
    prior_mean, tokens = model.prior(t["features"])
    mean, log_variance = model.posterior(t["features"], t["deformation"])
    z = mean + noise * torch.exp(0.5 * log_variance) if noise is not None else mean
    decoded = model.deform(z, tokens, t["query_features"], t["queries"], t["evaluation"], t["skin"])
    error = decoded - t["targets"]
    reconstruction = (error ** 2).sum(-1).mean() / UNIT**2
    # KL(N(mu, s^2) || N(mu_cond, 1)) = 1/2 sum (s^2 + (mu - mu_cond)^2 - 1 - log s^2)
    kl = 0.5 * (log_variance.exp() + (mean - prior_mean) ** 2 - 1 - log_variance).sum((-1, -2)).mean()
    values = {"loss": reconstruction + kl_weight * kl, "reconstruction": reconstruction, "kl": kl,
              "vertex_error": error.norm(dim=-1).mean()}
    if inertia_weight:
        values["inertia"] = inertia_loss(model, prior_mean, tokens, t["query_features"], t["queries"], generator,
                                         inertia_radius)
        values["loss"] = values["loss"] + inertia_weight * values["inertia"]
    return values


class TrainingLoss(torch.nn.Module):
    """The model's loss as a module whose forward DistributedDataParallel wraps (DDP synchronises the
    gradients of what runs inside a forward)."""

    def __init__(self, model: NeuROKModel):
        super().__init__()
        self.model = model

    def forward(self, t: dict, noise: torch.Tensor | None, kl_weight: float, inertia_weight: float = 0.0,
                generator: torch.Generator | None = None, inertia_radius: float = INERTIA_RADIUS) -> dict:
        return losses(self.model, t, noise, kl_weight, inertia_weight, generator, inertia_radius)


def draw_batch(items, seed: int, step: int, examples: range, config: ModelConfig, augment: bool = True,
               pairs: str = "uniform") -> dict:
    """Examples ``examples`` of step ``step``'s batch, example i from the generator (seed, step, i):
    the same examples whichever process draws them."""
    picked = []
    for index in examples:
        rng = np.random.default_rng([seed, step, index])
        picked.append(make_example(items[int(rng.integers(len(items)))], rng, config, augment, pairs))
    return collate(picked)


def posterior_noise(seed: int, step: int, examples: range, shape: tuple[int, ...]) -> torch.Tensor:
    """The standard normal noise sampling the posterior of examples ``examples`` of step ``step``,
    example i's from the generator (seed, step, i, 1): the same on any device and process count."""
    return torch.from_numpy(np.stack([np.random.default_rng([seed, step, index, 1]).standard_normal(shape)
                                      for index in examples]).astype(np.float32))


def inertia_generator(seed: int, step: int, examples: range) -> torch.Generator:
    """The generator of the inertia term's draws for this process's ``examples`` of step ``step``: a
    resumed run draws what an uninterrupted one would (the same process count)."""
    state = np.random.SeedSequence([seed, step, examples.start, 2]).generate_state(1)[0]
    return torch.Generator().manual_seed(int(state))


def batches(corpus: Path, items, seed: int, first: int, last: int, examples: range, config: ModelConfig, workers: int,
            pairs: str = "uniform"):
    """This process's share (``examples``) of the training batches of steps ``first`` to ``last`` - 1
    in order; with ``workers`` > 1 drawn by that many processes (each reads the corpus once), 2 per
    process ahead of the step that needs them."""
    if workers == 1:
        for step in range(first, last):
            yield draw_batch(items, seed, step, examples, config, pairs=pairs)
        return
    pool, ahead = spawned_pool(workers, _load_draw_worker, corpus), collections.deque()
    try:
        for step in range(first, last):
            while len(ahead) < 2 * workers and step + len(ahead) < last:
                ahead.append(pool.submit(_pooled_draw, seed, step + len(ahead), examples, config, pairs))
            yield ahead.popleft().result()
    finally:  # a run stopped early (--hours) leaves nothing queued
        pool.shutdown(cancel_futures=True)


_worker_items = None  # a drawing process's own copy of the training sequences (``_load_draw_worker``)


def _load_draw_worker(corpus: Path) -> None:
    global _worker_items
    _worker_items = load_corpus(corpus, "train")


def _pooled_draw(seed: int, step: int, examples: range, config: ModelConfig, pairs: str) -> dict:
    return draw_batch(_worker_items, seed, step, examples, config, pairs=pairs)


@dataclasses.dataclass(frozen=True)
class Processes:
    """This process's place among those ``torchrun`` started (RANK, WORLD_SIZE, LOCAL_RANK); alone
    without it."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0

    @classmethod
    def from_environment(cls) -> "Processes":
        return cls(*(int(os.environ.get(name, default)) for name, default in
                     (("RANK", 0), ("WORLD_SIZE", 1), ("LOCAL_RANK", 0))))

    def share(self, batch: int) -> range:
        """The examples of each batch this process computes."""
        size = batch // self.world
        return range(self.rank * size, (self.rank + 1) * size)


def train(corpus: Path, out: Path, steps: int, batch: int, seed: int, device: str, config: ModelConfig,
          save_every: int = 250, log_every: int = 25, hours: float | None = None, learning_rate: float = 3e-4,
          until: int | None = None, kl_weight: float = KL_WEIGHT, kl_warmup: int = 0, draw_workers: int = 1,
          pairs: str = "uniform", init: Path | None = None, compile_loss: bool = False,
          inertia_weight: float = 0.0, inertia_radius: float = INERTIA_RADIUS) -> Path:
    """Train to ``steps`` (the learning-rate schedule's length); ``hours`` or ``until`` (a step) stop
    earlier, resumably; ``draw_workers`` processes draw the batches ahead; ``init`` a model file whose
    weights the run starts from (its config must be ``config``). Under ``torchrun``, each of
    its processes trains its share of every batch; ``compile_loss`` runs the loss through torch.compile;
    ``inertia_weight`` weighs the inertia term (``inertia.py``; 0: none), asked out to ``inertia_radius``.
    Returns the path of the model file."""
    if kl_warmup < 0:
        raise ValueError(f"kl_warmup must be 0 (no warm-up) or a number of steps, got {kl_warmup}")
    if draw_workers < 1:
        raise ValueError(f"draw_workers must be at least 1 (drawing in this process), got {draw_workers}")
    if inertia_weight < 0:
        raise ValueError(f"inertia_weight must be 0 (no inertia term) or positive, got {inertia_weight}")
    if not inertia_radius > 0:
        raise ValueError(f"inertia_radius must be positive (prior standard deviations), got {inertia_radius}")
    if pairs not in PAIRS:
        raise ValueError(f"pairs must be one of {', '.join(PAIRS)}, got {pairs!r}")
    processes = Processes.from_environment()
    if batch % processes.world:
        raise ValueError(f"a batch of {batch} does not split evenly over {processes.world} processes")
    lead, share = processes.rank == 0, processes.share(batch)
    out.mkdir(parents=True, exist_ok=True)
    device = resolve_device(device)
    if processes.world > 1:
        if device.type == "cuda":
            device = torch.device("cuda", processes.local_rank)
            torch.cuda.set_device(device)
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")
    torch.manual_seed(seed)
    model = NeuROKModel(config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=1e-4)
    checkpoint, step, elapsed = out / "checkpoint.pt", 0, 0.0
    shards = corpus_shards(corpus)
    if checkpoint.exists():
        payload = read_checkpoint(checkpoint)
        if payload["config"] != model.config_dict():
            raise ValueError(f"{checkpoint} was trained with another config: {payload['config']}")
        for name, value, default in (("kl_weight", kl_weight, KL_WEIGHT), ("kl_warmup", kl_warmup, 0),
                                     ("pairs", pairs, "uniform"), ("init", init and init.name, None),
                                     ("inertia_weight", inertia_weight, 0.0),
                                     ("inertia_radius", inertia_radius, INERTIA_RADIUS),
                                     ("augmentation", AUGMENTATION, "turn and stretch")):
            if payload["about"].get(name, default) != value:
                raise ValueError(f"{checkpoint} was trained with {name} {payload['about'].get(name, default)}, not {value}")
        _check_same_shards(checkpoint, payload["about"].get("shards"), shards)
        model.load_state_dict(payload["weights"])
        optimizer.load_state_dict(payload["optimizer"])
        step, elapsed = payload["step"], payload["about"]["seconds"]
        if lead:
            print(f"resuming at step {step} ({elapsed / 3600:.2f} h trained)", flush=True)
    elif init is not None:
        payload = read_checkpoint(init)
        if payload["config"] != model.config_dict():
            raise ValueError(f"{init} was trained with another config: {payload['config']}")
        model.load_state_dict(payload["weights"])
    loss = TrainingLoss(model)
    if processes.world > 1:  # the ranks' gradients averaged in backward; a static graph, since the
        # self-attention blocks' context norms never take part, the same ones every step
        loss = torch.nn.parallel.DistributedDataParallel(loss, device_ids=[device] if device.type == "cuda" else None,
                                                         static_graph=True)
    if compile_loss:  # fused kernels (inductor; a C++ compiler on the CPU), the same loss to rounding
        loss = torch.compile(loss)
    items = load_corpus(corpus, "train")
    if lead:
        heldout = load_corpus(corpus, "heldout")
        validation = validation_batch(model, heldout, seed, device)
        placed = f"{processes.world} processes on {device.type}" if processes.world > 1 else str(device)
        print(f"{len(items)} training sequences, {len(heldout)} held out; {sum(p.numel() for p in model.parameters()):,} "
              f"parameters on {placed}", flush=True)

    def about():
        return {"steps": step, "seconds": elapsed, "corpus": str(corpus.name), "train_sequences": len(items),
                "batch": batch, "seed": seed, "device": str(device), "processes": processes.world,
                "kl_weight": kl_weight, "kl_warmup": kl_warmup, "pairs": pairs, "init": init and init.name,
                "inertia_weight": inertia_weight, "inertia_radius": inertia_radius, "augmentation": AUGMENTATION,
                "shards": shards}

    def save(path: Path, **state) -> None:  # the weights, and beside them what they were trained on
        stamp = about()
        save_checkpoint(path, model, stamp, **state)
        manifest = out / "manifest.json"
        manifest.with_suffix(".partial").write_text(json.dumps(stamp, indent=1))
        os.replace(manifest.with_suffix(".partial"), manifest)

    began, last = time.perf_counter() - elapsed, min(steps, until or steps)
    drawn = batches(corpus, items, seed, step, last, share, config, draw_workers, pairs)
    with contextlib.ExitStack() as stack:
        log = stack.enter_context((out / "log.jsonl").open("a")) if lead else None
        stack.enter_context(contextlib.closing(drawn))
        while step < last and not out_of_time(elapsed, hours, processes, device):
            for group in optimizer.param_groups:  # cosine decay over the planned steps
                group["lr"] = learning_rate * 0.5 * (1 + math.cos(math.pi * step / steps))
            model.train()
            weight = kl_weight * min(1.0, (step + 1) / kl_warmup) if kl_warmup else kl_weight
            noise = posterior_noise(seed, step, share, (config.tokens, config.channels)).to(device)
            values = loss(batch_tensors(model, next(drawn), device), noise, weight, inertia_weight,
                          inertia_generator(seed, step, share), inertia_radius)
            optimizer.zero_grad()
            values["loss"].backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            elapsed = time.perf_counter() - began
            if step % log_every == 0 or step == steps:
                values = batch_means(values, processes)
                if lead:
                    model.eval()
                    with torch.no_grad():
                        held = losses(model, validation, kl_weight=weight)
                    write_log_row(log, step, elapsed, weight, values, held)
            if lead and step % save_every == 0:
                save(checkpoint, optimizer=optimizer.state_dict(), step=step)
    if lead:
        save(checkpoint, optimizer=optimizer.state_dict(), step=step)
        save(out / "neurok.pt")
    if processes.world > 1:  # the ranks leave together, not while process 0 still saves
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    return out / "neurok.pt"


def corpus_shards(corpus: Path) -> dict[str, int]:
    """The corpus's shards (name: bytes), training and held out: the batches of step s are drawn from
    the sequences in this order, so a run resumes only on the same ones."""
    return {path.name: path.stat().st_size for path in sorted(corpus.glob("*.npz"))
            if not path.name.endswith(".partial.npz")}


def _check_same_shards(checkpoint: Path, trained: dict | None, present: dict) -> None:
    """ValueError unless the corpus holds the shards the checkpoint was trained on (checkpoints that
    predate the list pass)."""
    if trained is None or trained == present:
        return
    added = sorted(set(present) - set(trained))
    gone = sorted(set(trained) - set(present))
    changed = sorted(k for k in set(trained) & set(present) if trained[k] != present[k])
    said = "; ".join(f"{what}: {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}"
                     for what, names in (("added", added), ("missing", gone), ("changed", changed)) if names)
    raise ValueError(f"{checkpoint} was trained on another corpus ({said}): a resume would draw other batches; "
                     f"train a new run from its weights (--init) to use this corpus")


def out_of_time(elapsed: float, hours: float | None, processes: Processes, device) -> bool:
    """Past ``hours`` of training, by process 0's clock, which every process follows."""
    if hours is None:
        return False
    over = torch.tensor([elapsed >= hours * 3600], dtype=torch.int32, device=device)
    if processes.world > 1:
        torch.distributed.broadcast(over, 0)
    return bool(over.item())


def batch_means(values: dict, processes: Processes) -> dict:
    """The loss terms of the whole batch: the mean of the processes' means (equal shares)."""
    stacked = torch.stack([v.detach().float() for v in values.values()])
    if processes.world > 1:
        torch.distributed.all_reduce(stacked)
        stacked /= processes.world
    return dict(zip(values, stacked.tolist()))


def write_log_row(log, step: int, elapsed: float, weight: float, values: dict, held: dict) -> None:
    row = {"step": step, "seconds": round(elapsed, 1), "kl_weight": weight, **values,
           "heldout_vertex_error": float(held["vertex_error"]), "heldout_kl": float(held["kl"])}
    log.write(json.dumps(row) + "\n")
    log.flush()
    print(f"step {step}: loss {row['loss']:.3f} (reconstruction {row['reconstruction']:.3f}, kl "
          f"{row['kl']:.1f}); held-out vertex error {row['heldout_vertex_error']:.4f} of the diagonal "
          f"[{elapsed / 60:.1f} min]", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--hours", type=float, default=None, help="stop (resumably) after this much training time")
    parser.add_argument("--until", type=int, default=None,
                        help="stop (resumably) at this step, on the schedule of --steps: runs compare at equal steps")
    parser.add_argument("--displacement", action="store_true", help="the ablation: plain displacements, no dual quaternions")
    parser.add_argument("--kl-weight", type=float, default=KL_WEIGHT,
                        help="weight of the KL term against the reconstruction in units of (1 %% of the diagonal)^2")
    parser.add_argument("--kl-warmup", type=int, default=0, help="ramp the KL weight from 0 over this many steps")
    parser.add_argument("--pairs", choices=PAIRS, default="uniform",
                        help="how each example's second frame is drawn: uniformly, or by its shape change")
    parser.add_argument("--draw-workers", type=int, default=1,
                        help="processes drawing the coming batches (1: in this one, between steps)")
    parser.add_argument("--config", type=json.loads, default={},
                        help='model config fields as JSON, e.g. \'{"width": 256, "tokens": 64}\' (default: the shipped model\'s)')
    parser.add_argument("--log-every", type=int, default=25, help="steps between log rows and held-out checks")
    parser.add_argument("--init", type=Path, default=None,
                        help="start from this model file's weights and config (a fine-tune)")
    parser.add_argument("--inertia-weight", type=float, default=0.0,
                        help="weight of the inertia term (training/inertia.py) against the reconstruction; 0: none")
    parser.add_argument("--inertia-radius", type=float, default=INERTIA_RADIUS,
                        help="prior standard deviations out to which the inertia term asks (past the calibrated wall)")
    parser.add_argument("--learning-rate", type=float, default=3e-4, help="peak of the cosine schedule")
    parser.add_argument("--compile", action="store_true",
                        help="run the loss through torch.compile (fused kernels after a compile of a minute or two)")
    a = parser.parse_args()
    unknown = set(a.config) - {f.name for f in dataclasses.fields(ModelConfig)}
    if unknown:
        parser.error(f"--config: no model config field {', '.join(sorted(unknown))}")
    if a.init is not None and (a.config or a.displacement):
        parser.error("--init takes its model's config: no --config or --displacement with it")
    config = ModelConfig(**(read_checkpoint(a.init)["config"] if a.init is not None else
                            {"dual_quaternion": not a.displacement, **a.config}))
    train(a.corpus, a.out, a.steps, a.batch, a.seed, a.device, config, log_every=a.log_every,
          hours=a.hours, until=a.until, kl_weight=a.kl_weight, kl_warmup=a.kl_warmup, draw_workers=a.draw_workers,
          pairs=a.pairs, init=a.init, learning_rate=a.learning_rate, compile_loss=a.compile,
          inertia_weight=a.inertia_weight, inertia_radius=a.inertia_radius)


if __name__ == "__main__":
    main()
