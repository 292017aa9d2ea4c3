"""What a bake will cost, told before it starts: the artist chooses whether a large one goes ahead."""

from dataclasses import dataclass

LARGE_SECONDS = 120.0  # a bake estimated to take longer, or to need more memory, asks first
LARGE_BYTES = 2 * 2**30


@dataclass(frozen=True)
class BakeEstimate:
    """Roughly what a bake of V vertices over F frames costs on one CPU thread, fitted to bakes of
    ico spheres of 41k and 164k vertices (docs/performance.md):

        seconds = 2 + F (0.15 + 2.5e-6 V)  [+ 1.5e-4 V to build a learned body]
        bytes   = 6e3 V + 12 F V            (sampling the body, then the frames in float32)

    A body whose damping or pull needs many more steps a frame takes longer."""

    seconds: float
    bytes: int
    available: int | None  # bytes of memory free now, where the system says

    @classmethod
    def of(cls, vertices: int, frames: int, learned: bool) -> "BakeEstimate":
        seconds = 2.0 + frames * (0.15 + 2.5e-6 * vertices) + (1.5e-4 * vertices if learned else 0.0)
        return cls(seconds, int(6e3 * vertices + 12 * frames * vertices), _available_memory())

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
