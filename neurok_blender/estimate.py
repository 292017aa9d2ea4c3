"""What a bake will cost, told before it starts: the artist chooses whether a large one goes ahead."""

from dataclasses import dataclass

LARGE_SECONDS = 120.0  # a bake estimated to take longer, or to need more memory, asks first
LARGE_BYTES = 2 * 2**30


@dataclass(frozen=True)
class BakeEstimate:
    """Roughly what a bake of V vertices over F frames costs on one CPU thread, fitted to bakes of
    spheres of 1k-164k vertices landing on the ground (benchmarks/bake_estimate.py, docs/performance.md):

        seconds = 1.2 + F (0.0072 + 2.4e-7 V)  [+ 1.6 + F (0.018 + 2.3e-7 V) for a learned body]
        bytes   = 240 MB + 100 V + 48 F V  [570 MB + 2e3 V + 48 F V learned]   (torch and the model,
                  the learned body's build, the frames as positions and as shape keys)

    A body whose damping or pull needs many more steps a frame takes longer; one that comes to rest
    and sleeps, far less."""

    seconds: float
    bytes: int
    available: int | None  # bytes of memory free now, where the system says

    @classmethod
    def of(cls, vertices: int, frames: int, learned: bool) -> "BakeEstimate":
        seconds = 1.2 + frames * (0.0072 + 2.4e-7 * vertices)
        base, per_vertex = 240 * 2**20, 100
        if learned:
            seconds += 1.6 + frames * (0.018 + 2.3e-7 * vertices)
            base, per_vertex = 570 * 2**20, 2e3
        return cls(seconds, int(base + per_vertex * vertices + 48 * frames * vertices), _available_memory())

    @property
    def large(self) -> bool:
        too_much = self.available is not None and self.bytes > self.available
        return self.seconds > LARGE_SECONDS or self.bytes > LARGE_BYTES or too_much

    def __str__(self) -> str:
        time = f"{self.seconds / 60:.0f} min" if self.seconds >= 90 else f"{self.seconds:.0f} s"
        free = "" if self.available is None else f" of the {self.available / 2**30:.1f} GB free"
        return f"about {time} and {self.bytes / 2**30:.1f} GB{free}"


def _available_memory() -> int | None:
    """MemAvailable of /proc/meminfo (Linux), else None."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
