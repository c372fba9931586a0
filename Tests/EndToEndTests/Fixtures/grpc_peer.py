#!/usr/bin/env python3
"""gRPC peers for cookie-proxy's end-to-end tests (grpcio from PyPI; no generated code: bytes in, bytes out).

server [CERT KEY]: a server on 127.0.0.1 (any free port; TLS with CERT and KEY when given); prints "PORT <n>" and
  runs until killed. Its methods:
  /test.Echo/Say       answers b"echo:" + the request, with initial metadata set-cookie: sid=1; Path=/ and
                       trailing metadata x-trailer: done
  /test.Echo/NotFound  fails before any message (a Trailers-Only response): NOT_FOUND, "no such echo", trailing
                       metadata x-trailer: done and x-detail-bin: bytes 00 01 fe ff
  /test.Echo/Stream    (server streaming) two messages, then PERMISSION_DENIED "after two" with x-trailer: done
  /test.Echo/Slow      answers after 3 s (a deadline shorter than that expires first)
client TARGET [CA] [--method NAME] [--timeout S]: one call to TARGET (host:port; over TLS trusting CA when given,
  through $grpc_proxy if set); prints a JSON object: code, details, reply (the messages joined by "|"), set-cookie
  (initial metadata), trailer (x-trailer) and detail-bin (x-detail-bin, hex) from the trailing metadata."""
import json, sys, time
from concurrent import futures

import grpc

def serve(args):
    def say(request, context):
        context.send_initial_metadata((("set-cookie", "sid=1; Path=/"),))
        context.set_trailing_metadata((("x-trailer", "done"),))
        return b"echo:" + request

    def not_found(request, context):
        context.set_trailing_metadata((("x-trailer", "done"), ("x-detail-bin", bytes([0, 1, 0xFE, 0xFF]))))
        context.abort(grpc.StatusCode.NOT_FOUND, "no such echo")

    def stream(request, context):
        yield b"one"
        yield b"two"
        context.set_trailing_metadata((("x-trailer", "done"),))
        context.abort(grpc.StatusCode.PERMISSION_DENIED, "after two")

    def slow(request, context):
        time.sleep(3)
        return b"late"

    handler = grpc.method_handlers_generic_handler(
        "test.Echo", {
            "Say": grpc.unary_unary_rpc_method_handler(say),
            "NotFound": grpc.unary_unary_rpc_method_handler(not_found),
            "Stream": grpc.unary_stream_rpc_method_handler(stream),
            "Slow": grpc.unary_unary_rpc_method_handler(slow),
        })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    if args:
        cert, key = (open(p, "rb").read() for p in args[:2])
        port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials(((key, cert),)))
    else:
        port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print("PORT", port, flush=True)
    while True:
        time.sleep(3600)


def call(args):
    method, timeout = "Say", 20.0
    while len(args) > 1 and args[-2] in ("--method", "--timeout"):
        if args[-2] == "--method":
            method = args[-1]
        else:
            timeout = float(args[-1])
        args = args[:-2]
    target = args[0]
    if len(args) > 1:
        credentials = grpc.ssl_channel_credentials(root_certificates=open(args[1], "rb").read())
        channel = grpc.secure_channel(target, credentials)
    else:
        channel = grpc.insecure_channel(target)
    path = "/test.Echo/" + method
    replies, outcome = [], None
    try:
        if method == "Stream":
            outcome = channel.unary_stream(path)(b"hello", timeout=timeout)
            for reply in outcome:
                replies.append(reply)
        else:
            reply, outcome = channel.unary_unary(path).with_call(b"hello", timeout=timeout)
            replies.append(reply)
        code, details = outcome.code().name, outcome.details()
    except grpc.RpcError as error:
        outcome, code, details = error, error.code().name, error.details()
    initial = dict(outcome.initial_metadata() or ())
    trailing = dict(outcome.trailing_metadata() or ())
    detail = trailing.get("x-detail-bin")
    print(json.dumps({"code": code, "details": details, "reply": "|".join(r.decode() for r in replies),
                      "set-cookie": initial.get("set-cookie"), "trailer": trailing.get("x-trailer"),
                      "detail-bin": detail.hex() if detail is not None else None}))


if __name__ == "__main__":
    {"server": serve, "client": call}[sys.argv[1]](sys.argv[2:])
