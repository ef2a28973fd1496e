"""Deterministic workload shared by the Loro and Lattice merge benchmarks.

The Swift side (lattice-merge-figures) reimplements this generator bit for bit,
so any change here must be mirrored there.

N records named "r%06d" % i, record type "Track", 8 fields each.
Generation g: 0 = original values, 1 = edited values, 2 = the other side's
concurrent edit. Field values come from a splitmix64 stream seeded with
i * 8 + g * 1_000_000_007 (mod 2^64).
"""

MASK64 = (1 << 64) - 1
RECORD_TYPE = "Track"
DEFAULT_RECORDS = 100_000
# Field order matters: it is the order in which the rng is consumed and the
# order in which both sides write the fields.
FIELDS = ("title", "artist", "album", "plays", "rating", "score", "liked", "released")
FIELDS_PER_RECORD = len(FIELDS)  # 8


class SplitMix64:
    def __init__(self, seed: int):
        self.state = seed & MASK64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


def record_name(i: int) -> str:
    return "r%06d" % i


def _word(rng: SplitMix64) -> str:
    return "".join(chr(ord("a") + rng.next() % 26) for _ in range(20))


def record_values(i: int, g: int) -> dict:
    """The 8 field values of record i in generation g, in FIELDS order.

    `released` is a date, carried as integer milliseconds since the epoch.
    """
    rng = SplitMix64(i * 8 + g * 1_000_000_007)
    title = _word(rng)
    artist = _word(rng)
    album = _word(rng)
    return {
        "title": title,
        "artist": artist,
        "album": album,
        "plays": i + g,
        "rating": rng.next() % 1_000_000,
        "score": i * 0.5 + g,
        "liked": (i + g) % 2 == 0,
        "released": 1_700_000_000_000 + i * 1000 + g,
    }


if __name__ == "__main__":
    # Print a few records so the Swift port can be checked against this one.
    for i in (0, 1, 99_999):
        for g in (0, 1, 2):
            print(record_name(i), g, record_values(i, g))
