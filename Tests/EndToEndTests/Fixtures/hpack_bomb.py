#!/usr/bin/env python3
"""HPACK bombs for cookie-proxy's end-to-end tests (RFC 7541 §7.3, RFC 9113 §10.5.1): a header block that adds one
4,000-byte field to the HPACK table and then names it by its one-byte index in every other byte of a HEADERS frame
and FRAMES-1 CONTINUATION frames of 16,384 bytes each (81,920 bytes on the wire with FRAMES 5, over 300 MB decoded).
Frames are written by hand (the h2 library refuses to send such a block); hpack (PyPI) encodes the first fields.

client PORT FRAMES: sends the bomb as a request (GET /cookies) on a new h2c connection, then prints one JSON line:
  {"status": n} (the response's :status), {"reset": error_code}, {"goaway": error_code} or {"closed": true}.
origin FRAMES: an h2c origin on 127.0.0.1 (a free port; prints "PORT <n>") that answers GET /bomb with the bomb as
  its response head (:status 200) and any other request with 200 and the body "fine"."""
import json, socket, struct, sys, threading

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, CONTINUATION = 0, 1, 3, 4, 6, 7, 9
END_STREAM, END_HEADERS, ACK = 0x1, 0x4, 0x1
FRAME = 16384


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def bomb(encoder, fields, frames, stream):
    """The block: `fields`, one 4,000-byte field (the newest table entry: index 62), then index 62 (0xBE) over and
    over, cut into HEADERS + CONTINUATION frames; the stream ends with the block."""
    first = encoder.encode(fields + [("x-bomb", "a" * 4000)])
    block = first + b"\xbe" * (frames * FRAME - len(first))
    parts = [block[i : i + FRAME] for i in range(0, len(block), FRAME)]
    out = frame(HEADERS, END_STREAM | (END_HEADERS if len(parts) == 1 else 0), stream, parts[0])
    for i, part in enumerate(parts[1:], 1):
        out += frame(CONTINUATION, END_HEADERS if i == len(parts) - 1 else 0, stream, part)
    return out


def read_frame(sock, buffer):
    while len(buffer) < 9 or len(buffer) < 9 + int.from_bytes(buffer[:3], "big"):
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buffer += chunk
    length = int.from_bytes(buffer[:3], "big")
    kind, flags, stream = buffer[3], buffer[4], int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
    payload = bytes(buffer[9 : 9 + length])
    del buffer[: 9 + length]
    return kind, flags, stream, payload


def client(port, frames):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(30)
    request = [(":method", "GET"), (":scheme", "http"), (":path", "/cookies"), (":authority", "127.0.0.1")]
    sock.sendall(PREFACE + frame(SETTINGS, 0, 0) + bomb(hpack.Encoder(), request, frames, 1))
    decoder, buffer, block = hpack.Decoder(), bytearray(), b""
    while True:
        try:
            got = read_frame(sock, buffer)
        except (ConnectionResetError, socket.timeout):
            got = None
        if got is None:
            return {"closed": True}
        kind, flags, stream, payload = got
        if kind == SETTINGS and not flags & ACK:
            sock.sendall(frame(SETTINGS, ACK, 0))
        elif kind == GOAWAY:
            return {"goaway": int.from_bytes(payload[4:8], "big")}
        elif kind == RST_STREAM and stream == 1:
            return {"reset": int.from_bytes(payload[:4], "big")}
        elif kind in (HEADERS, CONTINUATION) and stream == 1:
            block += payload[1 + payload[0] :] if kind == HEADERS and flags & 0x8 else payload
            if flags & END_HEADERS:
                return {"status": int(dict(decoder.decode(block))[":status"])}


def serve(conn, frames):
    encoder, decoder, buffer, blocks = hpack.Encoder(), hpack.Decoder(), bytearray(), {}
    conn.sendall(frame(SETTINGS, 0, 0))
    preface = b""
    while len(preface) < len(PREFACE):
        chunk = conn.recv(len(PREFACE) - len(preface))
        if not chunk:
            return
        preface += chunk
    while (got := read_frame(conn, buffer)) is not None:
        kind, flags, stream, payload = got
        if kind == SETTINGS and not flags & ACK:
            conn.sendall(frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            conn.sendall(frame(PING, ACK, 0, payload))
        elif kind in (HEADERS, CONTINUATION):
            if kind == HEADERS and flags & 0x8:
                payload = payload[1 + payload[0] :]
            if kind == HEADERS and flags & 0x20:
                payload = payload[5:]
            blocks[stream] = blocks.get(stream, b"") + payload
            if flags & END_HEADERS:
                path = dict(decoder.decode(blocks.pop(stream))).get(":path")
                if path == "/bomb":
                    conn.sendall(bomb(encoder, [(":status", "200")], frames, stream))
                else:
                    head = encoder.encode([(":status", "200"), ("content-length", "4")])
                    conn.sendall(frame(HEADERS, END_HEADERS, stream, head) + frame(DATA, END_STREAM, stream, b"fine"))


def origin(frames):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    print("PORT", listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=lambda c=conn: (serve(c, frames), c.close()), daemon=True).start()


if __name__ == "__main__":
    if sys.argv[1] == "client":
        print(json.dumps(client(int(sys.argv[2]), int(sys.argv[3]))), flush=True)
    else:
        origin(int(sys.argv[2]))
