"""The core paper's Algorithm 1 on a trace: per static id, how its warps touch memory.

Records with the same (static id, dynamic id, block, warp) were executed together: one
warp-level request (a warp is 32 consecutive linear thread ids of a block). Within a
request the lanes' byte offsets are sorted and the differences between neighbours are
the request's strides. When lanes are inactive (divergence: a CSR loop whose rows end
at different j, an `if` on the data), the active lanes are also taken in lane order
with each difference divided by the lanes between them, the stride the full warp would
have had: lanes 0, 3 and 5 reading y[i] advance one element per lane, which is how the
static analysis sees y[i] too. Of the two readings the one with the smaller largest
stride counts (sorting alone already makes a permutation within a segment coalesced).
Over all requests of a static id:

- min / max / average stride (bytes; also reported in elements);
- coalesced when the largest stride is at most the element size (neighbouring lanes
  touch the same or the next element: stride 0 is a broadcast, stride 1 element the
  ideal), else uncoalesced; a broadcast when every request touches a single address,
  requests of one active lane included (`if (tid == 0)`): the static analysis calls a
  reference whose subscript no thread axis of the warp varies a broadcast too;
- sectors per request: the distinct 32-byte sectors of the request's offsets (arrays
  start sector-aligned, as cudaMalloc's do), against the ideal, the fewest sectors the
  request's distinct elements need;
- the global largest gap: all offsets the static id touched, sorted; the largest
  difference between neighbours. An uncoalesced reference whose largest gap exceeds the
  element size leaves holes in memory, so its "accesses cannot all be coalesced" by any
  assignment of work to threads; otherwise "a thread-geometry transformation can fix
  it", and for a load "also consider shared memory" (stage it coalesced);
- the stride distribution: the most frequent strides (elements) and their shares, the
  measure that describes irregular references (`A[P[i]]`, CSR loops).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from polycoal.analysis.coalescing import request_sectors
from polycoal.dynamic.collect import Record
from polycoal.dynamic.instrument import Site
from polycoal.frontend.dialect import cuda_dialect

HISTOGRAM_TOP = 5


@dataclass(frozen=True)
class SiteStats:
    site: Site
    requests: int
    accesses: int
    min_stride: int                          # bytes, over all requests
    max_stride: int
    avg_stride: float
    coalesced: bool
    broadcast: bool                          # every request reads one address
    largest_gap: int                         # bytes
    sectors_min: int
    sectors_max: int
    sectors_avg: float
    ideal_avg: float
    histogram: tuple[tuple[int, float], ...]  # (stride in elements, share), most frequent first
    verdict: str
    advice: str | None


def request_groups(records: list[Record]) -> dict[tuple[int, int, int, int], list[int]]:
    """(static id, dynamic id, block, warp) -> the indices of that request's records."""
    warp = cuda_dialect().warp_size
    groups: dict[tuple[int, int, int, int], list[int]] = defaultdict(list)
    for k, r in enumerate(records):
        groups[(r.sid, r.dyn, r.block, r.thread // warp)].append(k)
    return groups


def requests(records: list[Record]) -> dict[int, list[list[tuple[int, int]]]]:
    """Static id -> its warp-level requests, each the active lanes' (lane, byte offset)."""
    warp = cuda_dialect().warp_size
    out: dict[int, list[list[tuple[int, int]]]] = defaultdict(list)
    for (sid, *_), indices in request_groups(records).items():
        out[sid].append([(records[k].thread % warp, records[k].offset) for k in indices])
    return out


def request_strides(lanes: list[tuple[int, int]]) -> list[int]:
    """The strides (bytes) of one request: between sorted offsets, or, when that gives a
    larger largest stride, between lanes in lane order per lane between them (a
    difference the lane gap does not divide stays whole)."""
    ordered = sorted(o for _, o in lanes)
    by_offset = [b - a for a, b in zip(ordered, ordered[1:])]
    by_lane = []
    for (la, a), (lb, b) in zip(sorted(lanes), sorted(lanes)[1:]):
        d, gap = abs(b - a), max(1, lb - la)
        by_lane.append(d // gap if d % gap == 0 else d)
    return min(by_offset, by_lane, key=lambda s: max(s, default=0))


def site_stats(site: Site, reqs: list[list[tuple[int, int]]]) -> SiteStats:
    size = site.element_size
    strides: Counter = Counter()
    sectors, ideals = [], []
    touched: set[int] = set()
    for lanes in reqs:
        strides.update(request_strides(lanes))
        touched.update(o for _, o in lanes)
        touched_sectors, ideal = request_sectors((o for _, o in lanes), size)
        sectors.append(touched_sectors)
        ideals.append(ideal)
    n = sum(strides.values())
    low, high = (min(strides), max(strides)) if strides else (0, 0)
    avg = sum(s * c for s, c in strides.items()) / n if n else 0.0
    ordered = sorted(touched)
    gap = max((b - a for a, b in zip(ordered, ordered[1:])), default=0)
    coalesced = high <= size
    histogram = tuple((s // size, c / n) for s, c in strides.most_common(HISTOGRAM_TOP))
    broadcast = bool(reqs) and high == 0
    if coalesced:
        verdict, advice = ("broadcast" if broadcast else "coalesced"), None
    elif gap > size:
        verdict, advice = "uncoalesced", "accesses cannot all be coalesced"
    else:
        verdict = "uncoalesced"
        advice = "a thread-geometry transformation can fix it" + (
            "; also consider shared memory" if site.kind == "load" else "")
    return SiteStats(site, len(reqs), sum(map(len, reqs)), low, high, avg, coalesced,
                     broadcast, gap, min(sectors, default=0),
                     max(sectors, default=0), sum(sectors) / len(sectors) if sectors else 0.0,
                     sum(ideals) / len(ideals) if ideals else 0.0, histogram, verdict, advice)


def algorithm1(sites: list[Site], records: list[Record]) -> list[SiteStats]:
    """Statistics of every static id the trace executed, in static id order."""
    by_sid = requests(records)
    return [site_stats(s, by_sid[s.sid]) for s in sites if s.sid in by_sid]


def observed_loads(sites: list[Site], records: list[Record], limit: int = 256
                   ) -> dict[tuple[str, int], list[tuple[int, ...]]]:
    """The traced requests of the loads, per (array, line) (the placement cost model's
    key, analysis/placement_cost.py, which reads those of subscripts that are not
    affine): each request its
    active lanes' byte offsets in lane order; at most `limit` of a reference's requests,
    taken evenly over the trace."""
    by_sid = requests(records)
    out: dict[tuple[str, int], list[tuple[int, ...]]] = defaultdict(list)
    for site in sites:
        reqs = by_sid.get(site.sid)
        if site.kind != "load" or not reqs:
            continue
        step = max(1, len(reqs) // limit)
        out[(site.array, site.location.line)] += [tuple(o for _, o in sorted(r))
                                                  for r in reqs[::step][:limit]]
    return dict(out)
