"""Where a replay's fingerprinted bytes go: for the captured sites of the
tensor bundles given (or found under the folders given), the bytes one
replay fingerprints, the distinct ranges among them, and the ranges that take
the most bytes, with the kernels whose arguments they are, the range's
parameter offset and how far past the pointer the block runs. A diagnostic
for the tensor probes' cost (docs/performance.md).

--writes adds, by kernel family, the bytes whose fingerprint in one replay
equals the same range's previous fingerprint in that replay: ranges the
kernel only read (or rewrote with the same bytes). It bounds what knowing
each kernel's inputs could save.

--chunks MIN_SHIFT:TARGET[,...] adds, per chunking policy (the smallest
chunk 2^MIN_SHIFT bytes, at most TARGET chunks a range below 2 MiB each,
fingerprint_abi.h's chunkShiftFor; 16:64 is tcgd's), how the captured
sites' fingerprint launches are spread: sites by their chunks (the blocks
a launch can use) against the device's SMs, and the bytes in each class.
It tells whether a finer chunking would give the launches of few MiB more
of the device.

--joins adds the captured sites whose work waited for a pending fingerprint
node (TensorSite.waits: what it may write is read by the node; or it may
write beyond its ranges; the node was that of the work right before it), by
kernel family of the site waited for and of the waiting work, with the
bytes the waited-for node read, and what the waiting work writes of them:
the very range the node read (an in-place update), or other bytes of the same
allocation (a view, or a block the allocator handed on). It tells which
joins the job waits for and why.

    python3 tests/gpu/range_bytes.py BUNDLE_OR_DIR ... [--top N] [--writes] [--joins] [--chunks 16:64,14:256]
"""
import argparse
import collections
import pathlib
import sys

from tensor_bundle import TensorBundle


def bundles(paths):
    for p in map(pathlib.Path, paths):
        if p.is_dir():
            yield from sorted(p.rglob("*.tcgd-tensor"))
        else:
            yield p


def report(path, top):
    b = TensorBundle(str(path))
    captured = [s for s in b.sites if s["capture"] > 0]
    if not captured:
        return
    reused = sum(r["bytes"] for s in captured for r in s["ranges"] if r["reuse_site"])
    # The ranges fingerprinted (a reused known input is not: tensor.md, "Known inputs").
    captured = [dict(s, ranges=[r for r in s["ranges"] if not r["reuse_site"]]) for s in captured]
    total = sum(r["bytes"] for s in captured for r in s["ranges"])
    by_range = collections.defaultdict(lambda: {"count": 0, "kernels": collections.Counter(), "params": set()})
    sizes = collections.Counter()
    for s in captured:
        name = b.kernel_name(s) or f"function {s['function']:#x}"
        for r in s["ranges"]:
            e = by_range[(r["ptr"], r["bytes"])]
            e["count"] += 1
            e["kernels"][name[:70]] += 1
            e["params"].add(r["param"])
            bucket = 1 << max(0, (r["bytes"] - 1).bit_length())
            sizes[bucket] += r["bytes"]
    distinct = sum(k[1] for k in by_range)
    print(f"{path}: {len(captured)} captured sites, {sum(len(s['ranges']) for s in captured)} ranges, "
          f"{total / 1e9:.3f} GB a replay, {len(by_range)} distinct ranges of {distinct / 1e9:.3f} GB; "
          f"{reused / 1e9:.3f} GB of known inputs reused, not fingerprinted")
    print("  bytes by range size: " + ", ".join(f"<={k >> 10} KiB {v / 1e9:.3f} GB" for k, v in sorted(sizes.items())
                                                if v > total / 100))
    # Ranges of one launch that overlap (pointers into one allocation, each
    # range running to its end): bytes read more than once by one node.
    again = collections.Counter()
    for s in captured:
        spans = sorted((r["ptr"], r["ptr"] + r["bytes"]) for r in s["ranges"])
        covered, end = 0, 0
        for a, e in spans:
            covered += max(0, e - max(a, end))
            end = max(end, e)
        read = sum(e - a for a, e in spans)
        if covered < read:
            again[family(b.kernel_name(s) or "")] += read - covered
    if again:
        print(f"  bytes read again within one launch (overlapping ranges): {sum(again.values()) / 1e9:.3f} GB; "
              + ", ".join(f"{k} {v / 1e9:.3f}" for k, v in again.most_common(4)))
    rows = sorted(by_range.items(), key=lambda kv: -kv[0][1] * kv[1]["count"])[:top]
    for (ptr, nbytes), e in rows:
        kernels = "; ".join(f"{n} x{c}" for n, c in e["kernels"].most_common(3))
        print(f"  {nbytes * e['count'] / 1e9:7.3f} GB  {nbytes / 2**20:9.2f} MiB x{e['count']:<4} ptr {ptr:#x} "
              f"params {sorted(e['params'])[:4]}  {kernels}")


FAMILIES = ("gemm", "splitKreduce", "vectorized_elementwise", "unrolled_elementwise", "elementwise_kernel",
            "reduce_kernel", "multi_tensor_apply", "layer_norm", "fmha", "softmax", "embedding", "nll_loss",
            "memcpy", "memset")


def family(name):
    low = name.lower()
    return next((f for f in FAMILIES if f.lower() in low), name[:40] or "unnamed")


def writes(path):
    """Bytes by kernel family, and those unchanged since the range's last
    fingerprint in the same replay (the middle replay of the bundle)."""
    b = TensorBundle(str(path))
    captured = {s["site"]: s for s in b.sites if s["capture"] > 0}
    obs = [o for o in b.observations if o["site"] in captured]
    if not obs:
        return
    execs = sorted({o["exec"] for o in obs})
    replay = execs[len(execs) // 2]
    by_key = {(o["site"], o["range"]): o for o in obs if o["exec"] == replay}
    last = {}
    total = collections.Counter()
    unchanged = collections.Counter()
    for s in sorted(captured.values(), key=lambda s: (s["capture"], s["node"])):
        fam = family(b.kernel_name(s))
        for r in s["ranges"]:
            o = by_key.get((s["site"], r["index"]))
            if o is None or o.get("reused"):
                continue
            key = (r["ptr"], r["bytes"])
            total[fam] += r["bytes"]
            if last.get(key) == o["hash"]:
                unchanged[fam] += r["bytes"]
            last[key] = o["hash"]
    all_bytes = sum(total.values())
    all_unchanged = sum(unchanged.values())
    print(f"{path}: replay {replay}: {all_bytes / 1e9:.3f} GB fingerprinted, {all_unchanged / 1e9:.3f} GB "
          f"({all_unchanged / max(all_bytes, 1):.2f}) unchanged since the range's previous fingerprint")
    for fam, v in total.most_common():
        if v > all_bytes / 200:
            print(f"  {fam:28s} {v / 1e9:7.3f} GB, unchanged {unchanged[fam] / 1e9:7.3f} GB")


WAITS_WRITTEN, WAITS_UNSEEN, WAITS_NEWEST, WAITS_DEPTH = 1, 2, 4, 8  # TensorSite.waits


def joins(path, top):
    """The joins of the captured sites, by (waited-for family, waiting
    family) and how the waiting work's ranges meet what the node read."""
    b = TensorBundle(str(path))
    sites = {s["site"]: s for s in b.sites if s["capture"] > 0}
    if not sites:
        return
    by_reason = collections.Counter()
    pairs = collections.Counter()
    pair_bytes = collections.Counter()
    for s in sites.values():
        w = s.get("waits", 0)
        for bit, name in ((WAITS_WRITTEN, "written"), (WAITS_UNSEEN, "unseen"), (WAITS_NEWEST, "newest"),
                          (WAITS_DEPTH, "depth")):
            if w & bit:
                by_reason[name] += 1
        if not w & (WAITS_WRITTEN | WAITS_UNSEEN):
            continue
        waited = sites.get(s.get("waited_site", 0))
        if waited is None:
            pairs[("?", family(b.kernel_name(s)), "unknown", bool(w & WAITS_NEWEST))] += 1
            continue
        read = [(r["ptr"], r["ptr"] + r["bytes"], r) for r in waited["ranges"] if not r["reuse_site"]]
        how = "unseen" if w & WAITS_UNSEEN else "other"
        if w & WAITS_WRITTEN:
            for r in s["ranges"]:
                lo = r["base"] if r["base"] and r["base"] < r["ptr"] else r["ptr"]
                hi = r["ptr"] + r["extent"]
                for a, z, rr in read:
                    if lo < z and a < hi:
                        how = "in-place" if (r["ptr"], r["bytes"]) == (rr["ptr"], rr["bytes"]) else "same allocation"
                        break
                if how != "other":
                    break
        key = (family(b.kernel_name(waited)), family(b.kernel_name(s)), how, bool(w & WAITS_NEWEST))
        pairs[key] += 1
        pair_bytes[key] += sum(z - a for a, z, _ in read)
    print(f"{path}: captured sites {len(sites)}, waits: "
          + ", ".join(f"{k} {v}" for k, v in sorted(by_reason.items())))
    for key, n in pairs.most_common(top):
        waited, waiting, how, newest = key
        print(f"  {n:4d} {waiting} waits for {waited}'s node{' (the newest)' if newest else ''}: {how}, "
              f"{pair_bytes[key] / max(n, 1) / 1e6:.1f} MB read a node")


MAX_CHUNK_SHIFT = 21  # fingerprint_abi.h, kMaxChunkShift


def chunk_count(nbytes, min_shift, target):
    shift = min_shift
    while shift < MAX_CHUNK_SHIFT and (nbytes + (1 << shift) - 1) >> shift > target:
        shift += 1
    return max(1, (nbytes + (1 << shift) - 1) >> shift)


def chunks(path, policies, sms=132):
    b = TensorBundle(str(path))
    sites = [[r["bytes"] for r in s["ranges"] if not r["reuse_site"]] for s in b.sites if s["capture"] > 0]
    sites = [s for s in sites if s]
    if not sites:
        return
    edges = [(sms // 4, f"< {sms // 4}"), (sms, f"< {sms} (SMs)"), (4 * sms, f"< {4 * sms}"),
             (None, f">= {4 * sms}")]
    print(f"{path}: {len(sites)} captured sites fingerprinted, by their launches' chunks "
          f"({sms} SMs assumed)")
    for min_shift, target in policies:
        count = collections.Counter()
        size = collections.Counter()
        for ranges in sites:
            n = sum(chunk_count(x, min_shift, target) for x in ranges)
            label = next(lab for edge, lab in edges if edge is None or n < edge)
            count[label] += 1
            size[label] += sum(ranges)
        print(f"  chunks {1 << (min_shift - 10)} KiB up, at most {target}: " +
              ", ".join(f"{lab}: {count[lab]} sites {size[lab] / 1e9:.3f} GB" for _, lab in edges if count[lab]))


def policy(text):
    try:
        out = []
        for item in text.split(","):
            a, b = item.split(":")
            out.append((int(a), int(b)))
        if any(not 10 <= a <= MAX_CHUNK_SHIFT or b < 1 for a, b in out):
            raise ValueError
        return out
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected MIN_SHIFT:TARGET[,...], MIN_SHIFT 10 to 21")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--writes", action="store_true")
    ap.add_argument("--joins", action="store_true")
    ap.add_argument("--chunks", type=policy, help="MIN_SHIFT:TARGET[,...], e.g. 16:64,14:256")
    args = ap.parse_args()
    for path in bundles(args.paths):
        try:
            report(path, args.top)
            if args.writes:
                writes(path)
            if args.joins:
                joins(path, args.top)
            if args.chunks:
                chunks(path, args.chunks)
        except ValueError as e:
            print(f"{path}: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
