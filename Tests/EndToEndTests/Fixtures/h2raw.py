#!/usr/bin/env python3
"""A raw HTTP/2 client (h2c with prior knowledge) for cookie-proxy's end-to-end tests: sends requests exactly as
given, with h2's own validation off, so malformed ones reach the proxy as written.

usage: h2raw.py PORT CASES_JSON
       h2raw.py PORT --stall STREAMS PATH SECONDS
       h2raw.py PORT --parallel STREAMS PATH
CASES_JSON: a list of requests, each {"headers": [[name, value], ...], "data": "...", "content_length": n}
(names and values as latin-1 text; "data" sent in one DATA frame ending the stream; without it the HEADERS end
the stream). Each request goes on its own stream of one connection, one after the other. Prints one JSON line per
request: {"status": 200, "headers": [[n, v], ...], "body": "..."} or {"reset": error_code} or
{"goaway": error_code}.
--stall opens STREAMS streams GET PATH at once, reads their frames without giving back any window for SECONDS
(a client that never reads its responses), then prints {"received": bytes of DATA} and exits.
--parallel opens STREAMS streams GET PATH at once on one connection and prints the JSON list of their bodies."""
import json, socket, sys

import h2.config, h2.connection, h2.events, h2.settings


def stall(port, streams, path, seconds):
    import time
    sock = socket.create_connection(("127.0.0.1", port))
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    for _ in range(streams):
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, [(":method", "GET"), (":scheme", "http"), (":path", path),
                                   (":authority", "127.0.0.1")], end_stream=True)
    sock.sendall(conn.data_to_send())
    received, deadline = 0, time.time() + seconds
    sock.settimeout(0.2)
    while time.time() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            break
        for event in conn.receive_data(chunk):
            if isinstance(event, h2.events.DataReceived):
                received += len(event.data)
        sock.sendall(conn.data_to_send())
    print(json.dumps({"received": received}), flush=True)


def parallel(port, streams, path):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(20)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    ids = []
    for _ in range(streams):
        stream = conn.get_next_available_stream_id()
        ids.append(stream)
        conn.send_headers(stream, [(":method", "GET"), (":scheme", "http"), (":path", path),
                                   (":authority", "127.0.0.1")], end_stream=True)
    sock.sendall(conn.data_to_send())
    bodies, ended = {i: b"" for i in ids}, set()
    while len(ended) < len(ids):
        data = sock.recv(65536)
        if not data:
            break
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.DataReceived):
                bodies[event.stream_id] += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                ended.add(event.stream_id)
        sock.sendall(conn.data_to_send())
    print(json.dumps([bodies[i].decode("latin-1") for i in ids]), flush=True)


def main():
    port = int(sys.argv[1])
    if sys.argv[2] == "--parallel":
        return parallel(port, int(sys.argv[3]), sys.argv[4])
    if sys.argv[2] == "--stall":
        return stall(port, int(sys.argv[3]), sys.argv[4], float(sys.argv[5]))
    cases = json.loads(sys.argv[2])
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(10)
    config = h2.config.H2Configuration(
        client_side=True, header_encoding=None, validate_outbound_headers=False, normalize_outbound_headers=False,
        validate_inbound_headers=False, split_outbound_cookies=False)
    conn = h2.connection.H2Connection(config=config)
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    for case in cases:
        stream = conn.get_next_available_stream_id()
        headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in case["headers"]]
        data = case.get("data")
        conn.send_headers(stream, headers, end_stream=data is None)
        if data is not None:
            conn.send_data(stream, data.encode("latin-1"), end_stream=True)
        sock.sendall(conn.data_to_send())
        result = None
        response_headers, body = [], b""
        while result is None:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                result = {"timeout": True}
                break
            if not chunk:
                result = {"closed": True}
                break
            for event in conn.receive_data(chunk):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                    response_headers = [[n.decode("latin-1"), v.decode("latin-1")] for n, v in event.headers]
                elif isinstance(event, h2.events.DataReceived) and event.stream_id == stream:
                    body += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, stream)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                    status = dict(response_headers).get(":status")
                    result = {"status": int(status), "headers": response_headers, "body": body.decode("latin-1")}
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                    result = {"reset": int(event.error_code)}
                elif isinstance(event, h2.events.ConnectionTerminated):
                    result = {"goaway": int(event.error_code)}
            sock.sendall(conn.data_to_send())
        print(json.dumps(result), flush=True)
        if "goaway" in result or "closed" in result:
            break


if __name__ == "__main__":
    main()
