"""Reads a .tcgd-tensor bundle for the gate's checks without protobuf's
Python package (the GPU machine has none): the file and frame headers of
docs/bundle-format.md, and the protobuf wire format of the frames the
checks look at (TensorKernel, TensorSiteBatch, TensorObservationBatch,
TensorCounters, Point, Trailer, InternedData), field numbers as in
proto/tcgd/bundle.proto. `tcgd-analyze validate` checks the rest.
"""
import struct
import zlib

MAGIC = b"\x89TCGD\r\n\x1a"


def _varint(buf, i):
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def fields(buf):
    """{field number: [raw values]}: ints for varints, bytes for
    length-delimited, ('f64', bytes) / ('f32', bytes) for fixed widths."""
    out = {}
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
        elif wire == 1:
            v, i = ("f64", buf[i:i + 8]), i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wire == 5:
            v, i = ("f32", buf[i:i + 4]), i + 4
        else:
            raise ValueError(f"wire type {wire}")
        out.setdefault(num, []).append(v)
    return out


def _one(f, num, default=0):
    v = f.get(num)
    return v[-1] if v else default


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _packed_varints(f, num):
    vals = []
    for v in f.get(num, []):
        if isinstance(v, int):
            vals.append(v)
            continue
        i = 0
        while i < len(v):
            x, i = _varint(v, i)
            vals.append(x)
    return vals


def _packed_fixed(f, num, fmt):
    vals = []
    for v in f.get(num, []):
        if isinstance(v, tuple):
            vals.append(struct.unpack("<" + fmt, v[1])[0])
        else:
            vals.extend(struct.unpack("<%d%s" % (len(v) // 8, fmt), v))
    return vals


def _string(f, num):
    v = f.get(num)
    return v[-1].decode("utf-8", "replace") if v else ""


def _range(buf):
    f = fields(buf)
    return {"index": _one(f, 1), "param": _signed(_one(f, 2)),
            "offset": _one(f, 3), "ptr": _one(f, 4), "bytes": _one(f, 5), "extent": _one(f, 6),
            "base": _one(f, 7), "dtype": _one(f, 8), "source": _one(f, 9),
            # An explicit probe's tensor: its shape and strides.
            "shape": [_signed(v) for v in _packed_varints(f, 11)] if _one(f, 10) else None,
            "strides": [_signed(v) for v in _packed_varints(f, 12)] if _one(f, 10) else None,
            # A known input not fingerprinted at its site: its observation is
            # range reuse_range of site reuse_site (0: fingerprinted here).
            "reuse_site": _one(f, 13), "reuse_range": _one(f, 14)}


def _site(buf):
    f = fields(buf)
    names = ["site", "sequence", "time_ns", "tid", "kind", "function", "invocation", "stream", "device",
             "capture", "node", "capture_id"]
    s = {n: _one(f, i + 1) for i, n in enumerate(names)}
    s["device"] = _signed(s["device"]) if s["device"] >= 1 << 63 else s["device"]
    s["grid"] = _packed_varints(f, 13)
    s["block"] = _packed_varints(f, 14)
    s["shared_mem"] = _one(f, 15)
    s["params_blob"] = _one(f, 16)
    s["params_bytes"] = _one(f, 17)
    s["ranges"] = [_range(r) for r in f.get(18, [])]
    s["pointer_offsets"] = _packed_varints(f, 19)
    s["pointer_ranges"] = _packed_varints(f, 20)
    for i, n in enumerate(["status", "rule", "replay_first", "replay_last", "ranges_dropped", "copy_bytes",
                           "copy_source", "copy_kind"]):
        s[n] = _one(f, 21 + i)
    # Why the work waited for pending fingerprint nodes (TensorSite.waits).
    s["waits"] = _one(f, 30)
    s["waited_site"] = _one(f, 31)
    return s


def _observations(buf):
    f = fields(buf)
    cols = {
        "site": _packed_varints(f, 1), "exec": _packed_varints(f, 2), "range": _packed_varints(f, 3),
        "dtype": _packed_varints(f, 4), "flags": _packed_varints(f, 5), "elements": _packed_varints(f, 6),
        "hash": _packed_fixed(f, 7, "Q"), "nan": _packed_varints(f, 8), "pos_inf": _packed_varints(f, 9),
        "neg_inf": _packed_varints(f, 10), "zero": _packed_varints(f, 11),
        "min": _packed_fixed(f, 12, "d"), "max": _packed_fixed(f, 13, "d"), "sum": _packed_fixed(f, 14, "d"),
        "sum_squares": _packed_fixed(f, 15, "d"),
        "first_nonfinite": [_signed(v) for v in _packed_varints(f, 16)],
        "gpu_sequence": _packed_varints(f, 17), "chunks_missing": _packed_varints(f, 18),
    }
    n = len(cols["site"])
    return [{k: v[i] for k, v in cols.items() if i < len(v)} for i in range(n)]


class TensorBundle:
    def __init__(self, path):
        self.path = path
        self.kind = None
        self.kernels = {}
        self.sites = []
        self.observations = []
        self.counters = []
        self.payloads = []
        self.points = []
        self.blobs = {}
        self.trailer = None
        self.torn = False
        with open(path, "rb") as fh:
            data = fh.read()
        if data[:8] != MAGIC or len(data) < 16:
            raise ValueError(f"{path}: not a tcgd bundle")
        self.version, self.kind = struct.unpack("<II", data[8:16])
        i = 16
        while i < len(data):
            if i + 16 > len(data):
                self.torn = True
                break
            length, flags, crc, hcrc = struct.unpack("<IIII", data[i:i + 16])
            if zlib.crc32(data[i:i + 12]) != hcrc or i + 16 + length > len(data):
                self.torn = True
                break
            payload = data[i + 16:i + 16 + length]
            if zlib.crc32(payload) != crc:
                self.torn = True
                break
            self._frame(payload)
            i += 16 + length
        self._carry_reused()

    def _carry_reused(self):
        """Gives each reused range (TensorRange.reuse_site) a copy of the
        observation it names, in every execution, as tcgd-analyze does; the
        copies have "reused": True."""
        wanted = {}
        for s in self.sites:
            for r in s["ranges"]:
                if r["reuse_site"]:
                    wanted.setdefault((r["reuse_site"], r["reuse_range"]), []).append((s["site"], r))
        if not wanted:
            return
        have = {(o["site"], o["exec"], o["range"]) for o in self.observations}
        copies = []
        for o in self.observations:
            for site, r in wanted.get((o["site"], o["range"]), ()):
                if (site, o["exec"], r["index"]) in have:
                    continue
                c = dict(o, site=site, range=r["index"], reused=True)
                if r["dtype"] != o["dtype"]:  # statistics are the source dtype's: keep the hash only
                    c["dtype"] = 0
                    c["flags"] = o["flags"] | 1
                copies.append(c)
        self.observations.extend(copies)

    def _frame(self, payload):
        f = fields(payload)
        if 2 in f:
            p = fields(f[2][0])
            self.points.append({"sequence": _one(p, 1), "name": _string(p, 3), "ordinal": _one(p, 6)})
        if 4 in f:
            for blob in fields(f[4][0]).get(1, []):
                b = fields(blob)
                self.blobs[_one(b, 1)] = b.get(3, [b""])[-1]
        if 7 in f:
            k = fields(f[7][0])
            self.kernels[_one(k, 1)] = {"function": _one(k, 1), "name": _string(k, 2), "family": _one(k, 3),
                                        "param_offsets": _packed_varints(k, 4),
                                        "param_sizes": _packed_varints(k, 5), "dtype": _one(k, 6)}
        if 8 in f:
            self.sites.extend(_site(s) for s in fields(f[8][0]).get(1, []))
        if 9 in f:
            self.observations.extend(_observations(f[9][0]))
        if 10 in f:
            c = fields(f[10][0])
            skipped = {}
            for entry in c.get(8, []):
                e = fields(entry)
                skipped[_string(e, 1)] = _one(e, 2)
            self.counters.append({"point_ordinal": _one(c, 1), "final": bool(_one(c, 2)), "sites": _one(c, 3),
                                  "observations": _one(c, 4), "slots": _one(c, 5),
                                  "slots_dropped": _one(c, 6), "incomplete": _one(c, 7), "skipped": skipped})
        if 11 in f:  # TensorPayloadBatch: the recorded bytes
            for piece in fields(f[11][0]).get(1, []):
                p = fields(piece)
                self.payloads.append({"site": _one(p, 1), "exec": _one(p, 2), "range": _one(p, 3),
                                      "offset": _one(p, 4), "data": p.get(5, [b""])[-1], "wanted": _one(p, 6),
                                      "range_bytes": _one(p, 7), "limit": _one(p, 8), "flags": _one(p, 9)})
        if 15 in f:
            t = fields(f[15][0])
            self.trailer = {"complete": bool(_one(t, 1)), "end_reason": _string(t, 2)}

    def recorded(self, site, exec_, range_):
        """An observation's recorded bytes: its pieces joined in offset order."""
        pieces = sorted((p for p in self.payloads
                         if p["site"] == site and p["exec"] == exec_ and p["range"] == range_),
                        key=lambda p: p["offset"])
        return b"".join(p["data"] for p in pieces)

    def by_site(self):
        out = {}
        for o in self.observations:
            out.setdefault(o["site"], []).append(o)
        return out

    def kernel_name(self, site):
        k = self.kernels.get(site["function"])
        return k["name"] if k else ""
