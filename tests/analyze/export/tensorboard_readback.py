#!/usr/bin/env python3
"""export tensorboard on golden tensor bundles, read back by TensorBoard's reader.

    tensorboard_readback.py TCGD_ANALYZE GOLDEN_TENSOR_DIR HISTOGRAM_SAMPLE RECORDED_SAMPLE

Exports tests/golden/tensor/stale-input/{graph,eager}.tcgd-tensor, reads the
event files with tensorboard's EventAccumulator (which checks the TFRecord
CRCs itself; this script checks them again with a CRC-32C of its own) and
compares every exported value of the captured sites (graph run, step = replay
index) and of every eager launch (eager run without steps, step = the
kernel's invocation) with statistics recomputed here from
`tcgd-analyze dump --tensor ... --json`. Also checks --max-series, --kernel,
--tag-prefix and the --histograms note, and reads the histograms that
HISTOGRAM_SAMPLE (tcgd_tensorboard_histogram_sample) writes through the same
event writer, checking them against TensorBoard's default buckets computed
here. Exports the bundle with recorded values that RECORDED_SAMPLE
(tcgd_tensorboard_recorded_sample) writes with --histograms and checks every
histogram (num, min, max, sum, sum_squares, each bucket) against the values
decoded here with numpy from the bytes the sample says it recorded, and the
command's counts (histograms, no values, partial, unknown dtype).

Needs the tensorboard Python package (scripts/setup-deps.sh installs it); it
FAILS without it, so that CI cannot pass by skipping it.
"""
import glob
import json
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
    return condition


try:
    import numpy as np
    from tensorboard.backend.event_processing import event_accumulator
except ImportError as error:
    print(f"FAIL: the tensorboard Python package is missing ({error}); run scripts/setup-deps.sh "
          f"(it installs it with: {sys.executable} -m pip install --user tensorboard)")
    sys.exit(1)


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def check_framing(path):
    """Every record's two masked CRC-32Cs; returns the record count."""
    data = open(path, "rb").read()
    at, records = 0, 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        (length_crc,) = struct.unpack_from("<I", data, at + 8)
        check(length_crc == masked(crc32c(data[at:at + 8])), f"{path}: record {records}: length CRC")
        body = data[at + 12:at + 12 + length]
        (data_crc,) = struct.unpack_from("<I", data, at + 12 + length)
        # The file can be megabytes: check the data CRC of the first records only.
        if records < 50:
            check(data_crc == masked(crc32c(body)), f"{path}: record {records}: data CRC")
        at += 16 + length
        records += 1
    check(at == len(data), f"{path}: trailing bytes")
    return records


def run(tool, *args):
    result = subprocess.run([tool, *args], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"FAIL: {' '.join([tool, *args])} exited {result.returncode}\n{result.stdout}{result.stderr}")
        sys.exit(1)
    return result


def dump(tool, bundle, what):
    return [json.loads(line) for line in run(tool, "dump", "--tensor", what, "--json", bundle).stdout.splitlines()
            if line.strip()]


def export(tool, bundle, out, *options):
    result = run(tool, "export", "tensorboard", bundle, "-o", out, *options)
    files = glob.glob(os.path.join(out, "events.out.tfevents.*"))
    check(len(files) == 1, f"{out}: expected one event file, found {files}")
    check(not [f for f in os.listdir(out) if f.startswith(".")], f"{out}: a temporary file was left")
    check_framing(files[0])
    acc = event_accumulator.EventAccumulator(out, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    scalars = {}
    for tag in acc.Tags()["scalars"]:
        scalars[tag] = {e.step: e.value for e in acc.Scalars(tag)}
    return result, scalars


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def statistics(o):
    """The scalars of one observation, as the export defines them."""
    out = {"numel": o["elements"]}
    if o["hash_only"]:
        return out
    finite = o["elements"] - o["nan"] - o["pos_inf"] - o["neg_inf"]
    if finite > 0:
        mean = o["sum"] / finite
        out["mean"] = mean
        out["std"] = math.sqrt(max(0.0, o["sum_squares"] / finite - mean * mean))
        if o["minimum"] is not None and o["maximum"] is not None and o["minimum"] <= o["maximum"]:
            out["min"] = o["minimum"]
            out["max"] = o["maximum"]
        out["l2_norm"] = math.sqrt(max(0.0, o["sum_squares"]))
    out["nan"] = o["nan"]
    out["inf"] = o["pos_inf"] + o["neg_inf"]
    return out


def argument(kernel, rng):
    if rng["param"] < 0:
        return "dst"
    p = rng["param"]
    offsets = kernel.get("param_offsets", [])
    if kernel.get("param_status", 0) != 0 or p >= len(offsets) or rng["offset"] < offsets[p]:
        return f"word{rng['offset']}"
    into = rng["offset"] - offsets[p]
    return f"arg{p}" if into == 0 else f"arg{p}+{into}"


class Bundle:
    def __init__(self, tool, path):
        self.kernels = {k["function"]: k for k in dump(tool, path, "kernels")}
        self.sites = {s["site"]: s for s in dump(tool, path, "sites")}
        self.observations = {}
        for o in dump(tool, path, "observations"):
            self.observations[(o["site"], o["exec"], o["range"])] = o
        # Short names that distinct kernels share get "#n" in the export; those
        # kernels are left out of the comparison.
        shorts = {}
        for k in self.kernels.values():
            shorts.setdefault(k["short_name"], set()).add(k["name"])
        self.ambiguous = {s for s, names in shorts.items() if len(names) > 1}

    def kernel(self, site):
        return self.kernels[site["function"]]

    def name(self, site):
        return self.kernel(site)["short_name"].replace("/", "_")


def compare(scalars, expected, label):
    """expected: tag base -> step -> observation. Every statistic must be there."""
    compared = 0
    for base, by_step in expected.items():
        for step, o in by_step.items():
            if o["incomplete"]:
                continue
            for stat, value in statistics(o).items():
                tag = f"{base}/{stat}"
                if not check(tag in scalars, f"{label}: tag {tag} missing"):
                    continue
                if not check(step in scalars[tag], f"{label}: {tag}: step {step} missing ({sorted(scalars[tag])})"):
                    continue
                got = scalars[tag][step]
                check(math.isclose(got, f32(value), rel_tol=1e-6, abs_tol=1e-37),
                      f"{label}: {tag} at step {step}: {got}, bundle says {value}")
                compared += 1
    return compared


def graph_case(tool, golden, tmp):
    path = os.path.join(golden, "stale-input", "graph.tcgd-tensor")
    b = Bundle(tool, path)
    result, scalars = export(tool, path, os.path.join(tmp, "graph"), "--step-point", "none")
    # The captured sites in node order; position = earlier nodes of the same kernel.
    captured = sorted((s for s in b.sites.values() if s["capture"] != 0), key=lambda s: (s["capture"], s["node"]))
    check(len({s["capture"] for s in captured}) == 1, "stale-input graph: one capture expected")
    seen, expected = {}, {}
    for s in captured:
        name = b.kernel(s)["name"]
        position = seen.get(name, 0)
        seen[name] = position + 1
        if b.name(s) in b.ambiguous:
            continue
        for r in s["ranges"]:
            base = f"{b.name(s)}[{position}]/{argument(b.kernel(s), r)}"
            for (site, exec_, rng), o in b.observations.items():
                if site == s["site"] and rng == r["index"]:
                    expected.setdefault(base, {})[exec_] = o
    check(expected, "stale-input graph: no captured series to compare")
    replays = {step for by_step in expected.values() for step in by_step}
    check(replays == set(range(len(replays))), f"stale-input graph: replay indices {sorted(replays)}")
    compared = compare(scalars, expected, "stale-input graph")
    # Warm-up iteration -1 and the eager launches of each step are there too.
    check(any(-1 in v for v in scalars.values()), "stale-input graph: no warm-up step -1")
    check(len(scalars) > sum(len(statistics(next(iter(v.values())))) for v in expected.values()),
          "stale-input graph: the steps' eager launches are missing")
    total = sum(len(v) for v in scalars.values())
    check(f"{total} scalar values" in result.stdout, f"stale-input graph: {total} values read, export said: "
          f"{result.stdout}")
    print(f"graph: {len(scalars)} tags, {total} values read back; {compared} compared with the bundle")


def eager_case(tool, golden, tmp):
    path = os.path.join(golden, "stale-input", "eager.tcgd-tensor")
    b = Bundle(tool, path)
    result, scalars = export(tool, path, os.path.join(tmp, "eager"), "--step-point", "none")
    check("no steps" in result.stdout, f"stale-input eager: expected a run without steps: {result.stdout}")
    expected = {}
    for s in b.sites.values():
        check(s["capture"] == 0, "stale-input eager: a captured site")
        if b.name(s) in b.ambiguous:
            continue
        for r in s["ranges"]:
            o = b.observations.get((s["site"], 0, r["index"]))
            if o is None:
                continue
            base = f"{b.name(s)}/{argument(b.kernel(s), r)}"
            check(s["invocation"] not in expected.get(base, {}), f"{base}: invocation {s['invocation']} twice")
            expected.setdefault(base, {})[s["invocation"]] = o
    compared = compare(scalars, expected, "stale-input eager")
    exported = {t.rsplit("/", 1)[0] for t in scalars}
    check(exported == set(expected), f"stale-input eager: series {sorted(exported ^ set(expected))} differ")
    total = sum(len(v) for v in scalars.values())
    check(total == compared, f"stale-input eager: {total} values read back, {compared} expected")
    print(f"eager: {len(scalars)} tags, {total} values read back; {compared} compared with the bundle")


def options_case(tool, golden, tmp):
    path = os.path.join(golden, "stale-input", "graph.tcgd-tensor")
    result, scalars = export(tool, path, os.path.join(tmp, "capped"), "--max-series", "3", "--tag-prefix", "g/",
                             "--histograms")
    series = {t.rsplit("/", 1)[0] for t in scalars}
    check(len(series) == 3, f"--max-series 3: {len(series)} series")
    check(all(t.startswith("g/") for t in scalars), "--tag-prefix g/: a tag without it")
    check("CUT" in result.stdout and "--max-series 3" in result.stdout, f"--max-series: no note: {result.stdout}")
    check("holds no recorded values" in result.stderr, f"--histograms: no note on stderr: {result.stderr}")
    _, scalars = export(tool, path, os.path.join(tmp, "tanh"), "--kernel", "tanh")
    check(scalars and all(t.startswith("vectorized_elementwise_kernel<4, tanh_kernel_cuda") for t in scalars),
          f"--kernel tanh: {sorted(scalars)[:3]}")
    # A second export into the same directory replaces the file.
    _, again = export(tool, path, os.path.join(tmp, "tanh"), "--kernel", "tanh")
    check(again == scalars, "a second export into the same directory differs")


def default_limits():
    positive, v = [], 1e-12
    while v < 1e20:
        positive.append(v)
        v *= 1.1
    positive.append(sys.float_info.max)
    return [-x for x in reversed(positive)] + [0.0] + positive


def histogram_case(sample, tmp):
    out = os.path.join(tmp, "histograms")
    run(sample, out)
    check_framing(glob.glob(os.path.join(out, "events.out.tfevents.*"))[0])
    acc = event_accumulator.EventAccumulator(out, size_guidance={event_accumulator.HISTOGRAMS: 0})
    acc.Reload()
    check(sorted(acc.Tags()["histograms"]) == ["sample/hist", "sample/wide"], f"histogram tags {acc.Tags()}")
    limits = default_limits()
    cases = {("sample/hist", s): [math.sin(i * 0.37) * (s + 1) for i in range(1000)] for s in range(3)}
    cases[("sample/wide", 0)] = [-1e30, -1, 0, 0, 1e-13, 5, 1e25]
    for (tag, step), values in cases.items():
        events = [e for e in acc.Histograms(tag) if e.step == step]
        if not check(len(events) == 1, f"{tag}: step {step}: {len(events)} histograms"):
            continue
        h = events[0].histogram_value
        check(h.num == len(values), f"{tag}@{step}: num {h.num}")
        check(h.min == min(values) and h.max == max(values), f"{tag}@{step}: min/max {h.min} {h.max}")
        check(math.isclose(h.sum, sum(values), rel_tol=1e-9, abs_tol=1e-9), f"{tag}@{step}: sum {h.sum}")
        check(math.isclose(h.sum_squares, sum(v * v for v in values), rel_tol=1e-9), f"{tag}@{step}: sum_squares")
        # Bucket i holds [limit(i-1), limit(i)); the written limits must be
        # default ones, and each count what falls between them.
        check(all(limit in limits for limit in h.bucket_limit), f"{tag}@{step}: a limit not of the defaults")
        low = -sys.float_info.max
        for limit, count in zip(h.bucket_limit, h.bucket):
            inside = sum(1 for v in values if low <= v < limit)
            check(count == inside, f"{tag}@{step}: bucket [{low}, {limit}) holds {count}, expected {inside}")
            low = limit
        check(sum(h.bucket) == len(values), f"{tag}@{step}: buckets hold {sum(h.bucket)}")
    print(f"histograms: {len(cases)} read back and checked bucket by bucket")


def decode(dtype, data):
    """The elements of recorded bytes as float64, by the dtype's rules (a trailing partial element left out)."""
    widths = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int8": 1, "uint8": 1, "int32": 4,
              "int64": 8, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1}
    width = widths[dtype]
    data = data[:len(data) // width * width]
    plain = {"float32": "<f4", "float16": "<f2", "float64": "<f8", "int8": "<i1", "uint8": "<u1", "int32": "<i4",
             "int64": "<i8"}
    if dtype in plain:
        return np.frombuffer(data, plain[dtype]).astype(np.float64)
    raw = np.frombuffer(data, np.uint8)
    if dtype == "bool":
        return (raw != 0).astype(np.float64)
    if dtype == "bfloat16":
        return (np.frombuffer(data, "<u2").astype(np.uint32) << 16).view("<f4").astype(np.float64)
    if dtype == "float8_e5m2":  # the high byte of a float16
        return (raw.astype(np.uint16) << 8).view("<f2").astype(np.float64)
    # float8_e4m3fn: S.EEEE.MMM, bias 7, subnormals at E = 0, S.1111.111 NaN, no infinities.
    e, m = ((raw >> 3) & 15).astype(np.int64), (raw & 7).astype(np.float64)
    v = np.where(e == 0, m * 2.0 ** -9, (8 + m) * np.exp2(e - 10.0))
    v = np.where((e == 15) & ((raw & 7) == 7), np.nan, v)
    return np.where(raw & 0x80, -v, v)


def check_histogram(h, values, label, limits):
    """A written histogram against the finite `values`, bucket by bucket."""
    check(h.num == len(values), f"{label}: num {h.num}, expected {len(values)}")
    check(h.min == values.min() and h.max == values.max(), f"{label}: min/max {h.min} {h.max}, expected "
          f"{values.min()} {values.max()}")
    # Summed in element order, as the export does.
    total = squares = 0.0
    for v in values.tolist():
        total += v
        squares += v * v
    check(math.isclose(h.sum, total, rel_tol=1e-12, abs_tol=1e-300), f"{label}: sum {h.sum}, expected {total}")
    check(math.isclose(h.sum_squares, squares, rel_tol=1e-12, abs_tol=1e-300),
          f"{label}: sum_squares {h.sum_squares}, expected {squares}")
    # Dense counts in the default buckets: bucket i holds [limit(i-1), limit(i)).
    index = np.minimum(np.searchsorted(np.array(limits), values, side="right"), len(limits) - 1)
    dense = np.bincount(index, minlength=len(limits))
    previous = -1
    for limit, count in zip(h.bucket_limit, h.bucket):
        if not check(limit in limits, f"{label}: limit {limit} not a default one"):
            return
        at = limits.index(limit)
        expected = int(dense[previous + 1:at + 1].sum())
        check(count == expected, f"{label}: buckets up to {limit} hold {count}, expected {expected}")
        previous = at
    check(int(dense[previous + 1:].sum()) == 0, f"{label}: values beyond the last written bucket")


def recorded_case(tool, recorded_sample, tmp):
    path = os.path.join(tmp, "recorded.tcgd-tensor")
    manifest_path = os.path.join(tmp, "recorded.jsonl")
    run(recorded_sample, path, manifest_path)
    recorded = {}
    for line in open(manifest_path):
        r = json.loads(line)
        recorded[(r["site"], r["exec"], r["range"])] = r
    b = Bundle(tool, path)
    out = os.path.join(tmp, "recorded")
    result = run(tool, "export", "tensorboard", path, "-o", out, "--step-point", "none", "--histograms")
    check_framing(glob.glob(os.path.join(out, "events.out.tfevents.*"))[0])
    acc = event_accumulator.EventAccumulator(out, size_guidance={event_accumulator.SCALARS: 0,
                                                                 event_accumulator.HISTOGRAMS: 0})
    acc.Reload()
    histograms = {}
    for tag in acc.Tags()["histograms"]:
        for e in acc.Histograms(tag):
            check((tag, e.step) not in histograms, f"recorded: {tag} at step {e.step} twice")
            histograms[(tag, e.step)] = e
    scalar_times = {}
    for tag in acc.Tags()["scalars"]:
        for e in acc.Scalars(tag):
            scalar_times[(tag, e.step)] = e.wall_time
    # The expected histograms: every exported observation (the captured
    # sites' ranges, step = replay index) with recorded bytes of a known dtype
    # and a finite value among them.
    limits = default_limits()
    expected, exported = {}, 0
    no_values = partial = unknown = no_finite = 0
    seen = {}
    for s in sorted(b.sites.values(), key=lambda s: (s["capture"], s["node"])):
        name = b.kernel(s)["name"]
        position = seen.get(name, 0)
        seen[name] = position + 1
        for r in s["ranges"]:
            base = f"{b.name(s)}[{position}]/{argument(b.kernel(s), r)}"
            for (site, exec_, rng), o in b.observations.items():
                if site != s["site"] or rng != r["index"]:
                    continue
                exported += 1
                rec = recorded.get((site, exec_, rng))
                if rec is None or not rec["hex"]:
                    no_values += 1
                    continue
                if rec["dtype"] == "unknown":
                    unknown += 1
                    continue
                data = bytes.fromhex(rec["hex"])
                if len(data) < rec["range_bytes"] or rec["limit"] > len(data):
                    partial += 1
                values = decode(rec["dtype"], data)
                values = values[np.isfinite(values)]
                if len(values) == 0:
                    no_finite += 1
                    continue
                expected[(f"{base}/values", exec_)] = (values, f"{base}/numel")
    check(set(histograms) == set(expected), f"recorded: histograms {sorted(set(histograms) ^ set(expected))} "
          f"differ from the expected ones")
    for (tag, step), (values, scalar_tag) in expected.items():
        event = histograms.get((tag, step))
        if event is None:
            continue
        check(event.wall_time == scalar_times.get((scalar_tag, step)), f"{tag}@{step}: not at its scalars' time")
        check_histogram(event.histogram_value, values, f"{tag}@{step}", limits)
    check(no_values == 1 and partial == 2 and unknown == 3 and no_finite == 1,
          f"recorded sample: unexpected shape ({no_values} without values, {partial} partial, {unknown} unknown, "
          f"{no_finite} without a finite value)")
    summary = re.search(r"histograms +(\d+) written .*? of (\d+) observations exported; (\d+) of them partial .*\n"
                        r" +no histogram (\d+) without recorded values, (\d+) of unknown dtype, (\d+) without a "
                        r"finite value", result.stdout)
    if check(summary, f"recorded: no histogram summary: {result.stdout}"):
        got = tuple(int(x) for x in summary.groups())
        want = (len(expected), exported, partial, no_values, unknown, no_finite)
        check(got == want, f"recorded: summary says {got}, expected {want}")
    check("holds no recorded values" not in result.stderr, f"recorded: a no-values note: {result.stderr}")

    # --kernel and --max-series hold for the histograms as for the scalars.
    out = os.path.join(tmp, "recorded-mixed")
    run(tool, "export", "tensorboard", path, "-o", out, "--step-point", "none", "--histograms", "--kernel", "mixed")
    acc = event_accumulator.EventAccumulator(out, size_guidance={event_accumulator.HISTOGRAMS: 0})
    acc.Reload()
    tags = acc.Tags()["histograms"]
    want = {t for t, _ in expected if t.startswith("mixed")}
    check(set(tags) == want and want, f"--kernel mixed: histogram tags {sorted(tags)}")
    out = os.path.join(tmp, "recorded-capped")
    run(tool, "export", "tensorboard", path, "-o", out, "--step-point", "none", "--histograms", "--max-series", "1")
    acc = event_accumulator.EventAccumulator(out, size_guidance={event_accumulator.HISTOGRAMS: 0,
                                                                 event_accumulator.SCALARS: 0})
    acc.Reload()
    series = {t.rsplit("/", 1)[0] for t in acc.Tags()["scalars"]}
    check(len(series) == 1 and all(t.rsplit("/", 1)[0] in series for t in acc.Tags()["histograms"]),
          f"--max-series 1: histograms {acc.Tags()['histograms']} beyond the series {series}")
    print(f"recorded: {len(histograms)} histograms read back and checked bucket by bucket against numpy; "
          f"{no_values} without values, {partial} partial, {unknown} of unknown dtype, {no_finite} without a "
          f"finite value")


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    tool, golden, sample, recorded_sample = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    with tempfile.TemporaryDirectory(prefix="tcgd-tb-") as tmp:
        graph_case(tool, golden, tmp)
        eager_case(tool, golden, tmp)
        options_case(tool, golden, tmp)
        histogram_case(sample, tmp)
        recorded_case(tool, recorded_sample, tmp)
    for failure in FAILURES[:40]:
        print("FAIL:", failure)
    if FAILURES:
        print(f"{len(FAILURES)} failures")
        return 1
    print("export tensorboard: read back by tensorboard", event_accumulator.__name__, "- all values match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
