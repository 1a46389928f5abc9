"""clockrecv.py PORT OUT [BUNDLE [CERT KEY]]: the receiver of
scripts/clocktest.sh (run in the QEMU guest): a status URL (/status,
unsigned JSON documents, gzip-compressed when the request says
Content-Encoding: gzip) and a remote-write endpoint (/write,
snappy-compressed protobuf) on 127.0.0.1; with BUNDLE, GET /bundle serves
that file (503 while BUNDLE.down exists); with CERT and KEY, it speaks TLS.
Each request is one JSON line appended to OUT: when it came (the guest's
clock), and for a status document its generatedAt and node conditions, for
a remote-write batch its sample count and its lowest and highest sample
timestamps (ms). The standard library only: the guest has no snappy or
protobuf module, so both are decoded here (the block format and the
varint/length-delimited wire types are all a WriteRequest uses)."""

import gzip
import http.server
import json
import os
import ssl
import sys
import time


def uvarint(b, i):
    x = s = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return x, i


def unsnappy(b):
    _, i = uvarint(b, 0)
    o = bytearray()
    while i < len(b):
        t = b[i]
        i += 1
        kind = t & 3
        if kind == 0:
            n = t >> 2
            if n >= 60:
                nb = n - 59
                n = int.from_bytes(b[i : i + nb], "little")
                i += nb
            n += 1
            o += b[i : i + n]
            i += n
            continue
        if kind == 1:
            n, off = ((t >> 2) & 7) + 4, ((t >> 5) << 8) | b[i]
            i += 1
        elif kind == 2:
            n, off = (t >> 2) + 1, int.from_bytes(b[i : i + 2], "little")
            i += 2
        else:
            n, off = (t >> 2) + 1, int.from_bytes(b[i : i + 4], "little")
            i += 4
        for _ in range(n):
            o.append(o[-off])
    return bytes(o)


def fields(b):
    i = 0
    while i < len(b):
        key, i = uvarint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = uvarint(b, i)
        elif w == 1:
            v, i = b[i : i + 8], i + 8
        elif w == 2:
            n, i = uvarint(b, i)
            v, i = b[i : i + n], i + n
        elif w == 5:
            v, i = b[i : i + 4], i + 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, v


def timestamps(body):
    out = []
    for f, series in fields(unsnappy(body)):
        if f != 1:  # WriteRequest.timeseries
            continue
        for g, sample in fields(series):
            if g != 2:  # TimeSeries.samples
                continue
            for h, v in fields(sample):
                if h == 2:  # Sample.timestamp
                    out.append(v)
    return out


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        rec = {"at": time.time(), "path": self.path}
        try:
            if self.path == "/write":
                ts = timestamps(body)
                rec.update(n=len(ts), min=min(ts, default=0), max=max(ts, default=0))
            else:
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                d = json.loads(body)
                rec.update(generatedAt=d.get("generatedAt"), conditions=d.get("node", {}).get("conditions"))
        except Exception as e:  # recorded, and answered 400
            rec["error"] = repr(e)
        with open(OUT, "a") as f:
            f.write(json.dumps(rec) + "\n")
        self.send_response(400 if "error" in rec else 204)
        self.end_headers()

    def do_GET(self):
        if self.path != "/bundle" or not BUNDLE or os.path.exists(BUNDLE + ".down"):
            self.send_response(503)
            self.end_headers()
            return
        with open(BUNDLE, "rb") as f:
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    OUT = sys.argv[2]
    BUNDLE = sys.argv[3] if len(sys.argv) > 3 else ""
    srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    if len(sys.argv) > 5:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[4], sys.argv[5])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()
