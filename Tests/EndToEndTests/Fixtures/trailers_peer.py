#!/usr/bin/env python3
"""Both ends of a trailers exchange for cookie-proxy's end-to-end tests, in HTTP/1.1 (raw sockets, chunked) and
HTTP/2 (the h2 library, h2c with prior knowledge).

usage: trailers_peer.py origin h1|h2        prints PORT n, then serves until killed
       trailers_peer.py client h1|h2 PORT [PATH]   one POST (to PATH, /t by default) through the proxy,
                                                    prints one JSON line

The client sends a body of 5 bytes, "hello", of undeclared length (HTTP/1.1: chunked; HTTP/2: no content-length)
followed by the trailer x-request-trailer: q1, and asks for trailers (te: trailers). The origin answers 200 with the
request's trailers as its body ("x-request-trailer=q1", one per line; "none" without any), of undeclared length, and
the trailers x-response-trailer: r1 and grpc-status: 0; a path with "length" in it gets a content-length (HTTP/2
origin only: HTTP/1.1 has no place for trailers beside a length). The client prints {"status", "body", "trailers": {...}}."""
import json, socket, sys, threading

import h2.config, h2.connection, h2.events


def read_until(sock, buffer, marker):
    while marker not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("closed")
        buffer += chunk
    at = buffer.index(marker) + len(marker)
    return buffer[:at], buffer[at:]


def read_chunked(sock, buffer):
    """A chunked body after its head: (payload, trailers as a dict, rest)."""
    payload = b""
    while True:
        line, buffer = read_until(sock, buffer, b"\r\n")
        size = int(line.split(b";")[0], 16)
        if size == 0:
            break
        while len(buffer) < size + 2:
            buffer += sock.recv(65536)
        payload, buffer = payload + buffer[:size], buffer[size + 2:]
    trailers = {}
    while True:
        line, buffer = read_until(sock, buffer, b"\r\n")
        if line == b"\r\n":
            return payload, trailers, buffer
        name, _, value = line[:-2].partition(b":")
        trailers[name.decode().lower()] = value.strip().decode()


def read_body(sock, buffer, fields):
    """The body after a head with these fields: (payload, trailers as a dict, rest)."""
    if fields.get("transfer-encoding") == "chunked":
        return read_chunked(sock, buffer)
    length = int(fields.get("content-length", "0"))
    while len(buffer) < length:
        buffer += sock.recv(65536)
    return buffer[:length], {}, buffer[length:]


def head_fields(head):
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        if b":" in line:
            name, _, value = line.partition(b":")
            fields[name.decode().lower()] = value.strip().decode()
    return fields


def echo(trailers):
    return ("\n".join(f"{k}={v}" for k, v in sorted(trailers.items())) or "none").encode()


RESPONSE_TRAILERS = [("x-response-trailer", "r1"), ("grpc-status", "0")]


def serve_h1(conn):
    buffer = b""
    with conn:
        while True:
            try:
                head, buffer = read_until(conn, buffer, b"\r\n\r\n")
            except EOFError:
                return
            _, trailers, buffer = read_body(conn, buffer, head_fields(head))
            body = echo(trailers)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + b"%x\r\n" % len(body) + body + b"\r\n0\r\n"
                         + b"".join(f"{k}: {v}\r\n".encode() for k, v in RESPONSE_TRAILERS) + b"\r\n")


def serve_h2(conn):
    h2c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
    h2c.initiate_connection()
    conn.sendall(h2c.data_to_send())
    trailers, paths = {}, {}
    with conn:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            for event in h2c.receive_data(data):
                if isinstance(event, h2.events.DataReceived):
                    h2c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.TrailersReceived):
                    trailers[event.stream_id] = {k.decode(): v.decode() for k, v in event.headers}
                elif isinstance(event, h2.events.RequestReceived):
                    paths[event.stream_id] = dict(event.headers)[b":path"]
                elif isinstance(event, h2.events.StreamEnded):
                    body = echo(trailers.pop(event.stream_id, {}))
                    length = [("content-length", str(len(body)))] if b"length" in paths.pop(event.stream_id) else []
                    h2c.send_headers(event.stream_id, [(":status", "200"), ("content-type", "text/plain")] + length)
                    h2c.send_data(event.stream_id, body)
                    h2c.send_headers(event.stream_id, RESPONSE_TRAILERS, end_stream=True)
            conn.sendall(h2c.data_to_send())


def origin(version):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    print("PORT", server.getsockname()[1], flush=True)
    serve = serve_h1 if version == "h1" else serve_h2
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def client_h1(port, path):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nTE: trailers\r\nTransfer-Encoding: chunked\r\n"
                 b"Connection: close\r\n\r\n5\r\nhello\r\n0\r\nx-request-trailer: q1\r\n\r\n")
    head, buffer = read_until(sock, b"", b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    body, trailers, _ = read_body(sock, buffer, head_fields(head))
    return {"status": status, "body": body.decode(), "trailers": trailers}


def client_h2(port, path):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    h2c = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    h2c.initiate_connection()
    stream = h2c.get_next_available_stream_id()
    h2c.send_headers(stream, [(":method", "POST"), (":scheme", "http"), (":path", path),
                              (":authority", "127.0.0.1"), ("te", "trailers")])
    h2c.send_data(stream, b"hello")
    h2c.send_headers(stream, [("x-request-trailer", "q1")], end_stream=True)
    sock.sendall(h2c.data_to_send())
    result = {"status": 0, "body": "", "trailers": {}}
    while True:
        data = sock.recv(65536)
        if not data:
            break
        done = False
        for event in h2c.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                result["status"] = int(dict(event.headers)[b":status"])
            elif isinstance(event, h2.events.DataReceived):
                result["body"] += event.data.decode()
                h2c.acknowledge_received_data(event.flow_controlled_length, stream)
            elif isinstance(event, h2.events.TrailersReceived):
                result["trailers"] = {k.decode(): v.decode() for k, v in event.headers}
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                done = True
        sock.sendall(h2c.data_to_send())
        if done:
            break
    return result


if __name__ == "__main__":
    if sys.argv[1] == "origin":
        origin(sys.argv[2])
    else:
        path = sys.argv[4] if len(sys.argv) > 4 else "/t"
        client = client_h1 if sys.argv[2] == "h1" else client_h2
        print(json.dumps(client(int(sys.argv[3]), path)), flush=True)
